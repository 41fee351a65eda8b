// Package windowsci holds Linux-run tests that keep the Windows workflow
// (.github/workflows/windows.yml) able to pass and running what make
// test-unit runs on Linux: every test it runs on Windows either works there
// or is limited to Linux by a build constraint with its reason stated.
// Nothing but tests belongs here.
package windowsci
