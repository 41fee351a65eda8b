// Package config holds the plugin's command-line options: their
// registration on a flag set, defaults that depend on the OS and on other
// flags, and validation with messages naming the flag. It is pure and
// OS-neutral (the OS is a parameter), so every rule is tested on Linux.
package config
