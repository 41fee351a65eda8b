// Package config holds the plugin's command-line options: their
// registration on a flag set, defaults that depend on the OS and on other
// flags, and validation with messages naming the flag. It is pure and
// OS-neutral (the OS is a parameter), so every rule is tested on Linux.
//
// The logging flags are registered apart (logging.go, RegisterLogging):
// k8s.io/component-base's logging options, applied once right after the
// flags are parsed, before anything logs.
package config
