// Package integration holds tests that run the plugin's host code against a
// real Windows machine: the node service over pkg/winhost and the
// WMI/Win32 executor (pkg/winhost/wmiexec), with real disks, shares and
// links. They are built only on Windows with the integration build tag
// (go test -tags integration ./test/integration/...) and set up what they
// need on the machine itself (PowerShell in test setup only; the plugin
// never runs PowerShell). Everything they create is removed at cleanup.
package integration
