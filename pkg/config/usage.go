package config

import (
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
)

// Group is a group of flags in --help and in docs/flags.md.
type Group string

// The groups, in the order --help shows them. Logging holds the flags
// RegisterLogging adds; every flag Register adds is in another group.
const (
	GroupPlugin  Group = "Plugin flags"
	GroupCloud   Group = "Cloud flags"
	GroupWindows Group = "Windows host flags"
	GroupSim     Group = "Simulated host flags (--host=sim)"
	GroupLogging Group = "Logging flags"
)

// Groups lists the groups in --help order.
var Groups = []Group{GroupPlugin, GroupCloud, GroupWindows, GroupSim, GroupLogging}

// groupFlags places every flag Register and RegisterLogging add, in the
// order --help shows them; a flag none names goes last, with the logging
// flags.
var groupFlags = map[Group][]string{
	GroupPlugin: {"driver-name", "node-id", "endpoint", "kubelet-dir", "state-dir", "topology",
		"max-volumes-per-node", "http-endpoint", "enable-pprof", "shutdown-grace",
		"kubelet-registration", "kubelet-registration-path", "default-backend",
		"context-alias", "disk-preset", "volume-id-disk", "smb-require-privacy", "smb-default-domain", "volume-root-access", "version"},
	GroupCloud: {"cloud", "cloud-metadata-endpoint", "cloud-metadata-timeout"},
	GroupWindows: {"host", "offline-disk-on-unstage", "smb-keep-mappings", "keep-iscsi-portals",
		"orphan-sweep", "orphan-sweep-interval", "record-host-calls"},
	GroupSim:     {"sim-dir", "sim-config", "sim-auto-attach", "sim-disk-size", "sim-latency"},
	GroupLogging: loggingFlags,
}

// GroupOf returns the group of a flag; one no group names is GroupLogging.
func GroupOf(name string) Group {
	for g, names := range groupFlags {
		if slices.Contains(names, name) {
			return g
		}
	}
	return GroupLogging
}

// Usage writes --help: a usage line, what the plugin is, the flags by
// group (the logging flags last) and where they are documented.
func Usage(w io.Writer, fs *flag.FlagSet) {
	name := fs.Name()
	fmt.Fprintf(w, `Usage: %[1]s --driver-name=NAME [flags]
       %[1]s --host=sim --sim-dir=DIR --driver-name=NAME [flags]   (simulated Windows host, Linux)

A CSI node plugin for Windows nodes: it serves the CSI Identity and Node
services on --endpoint and does the host work (disks, SMB, iSCSI) itself.
Every flag, with its default and meaning: docs/flags.md
(https://github.com/wincsi/csi-windows-node/blob/main/docs/flags.md).

Subcommands (each takes these flags too; <subcommand> --help for its own):
  %[1]s diagnose    what is staged on this node, what backs it, what is wrong
  %[1]s preflight   is this node ready to serve? pass, warn or fail per check; --fix
  %[1]s selftest    stage, publish, write, read, grow and unstage a scratch disk, end to end
`, name)
	byGroup := groupedFlags(fs, func(string) bool { return true })
	for _, g := range Groups {
		if len(byGroup[g]) == 0 {
			continue
		}
		fmt.Fprintf(w, "\n%s:\n", g)
		for _, f := range byGroup[g] {
			printFlag(w, f, "--")
		}
	}
}

// SubcommandUsage writes the flags of a subcommand (diagnose, preflight,
// selftest) after its usage text: its own flags, those own reports, in
// full; then the plugin's flags, which it accepts too so that the
// container's arguments can be reused, by name and group only, as the
// plugin's --help and docs/flags.md explain them.
func SubcommandUsage(w io.Writer, fs *flag.FlagSet, own func(name string) bool) {
	fs.VisitAll(func(f *flag.Flag) {
		if own(f.Name) {
			printFlag(w, f, dashes(f.Name))
		}
	})
	byGroup := groupedFlags(fs, func(name string) bool { return !own(name) })
	fmt.Fprintf(w, "\nThe plugin's flags are accepted too (csi-windows-node --help and docs/flags.md explain them):\n")
	for _, g := range Groups {
		if len(byGroup[g]) == 0 {
			continue
		}
		line := "  " + string(g) + ":"
		for i, f := range byGroup[g] {
			name := " --" + f.Name
			if i < len(byGroup[g])-1 {
				name += ","
			}
			if len(line)+len(name) > 78 {
				fmt.Fprintln(w, line)
				line = "   "
			}
			line += name
		}
		fmt.Fprintln(w, line)
	}
}

// groupedFlags returns the flags of fs that keep reports, by group, each
// group in --help order.
func groupedFlags(fs *flag.FlagSet, keep func(name string) bool) map[Group][]*flag.Flag {
	byGroup := map[Group][]*flag.Flag{}
	fs.VisitAll(func(f *flag.Flag) {
		if keep(f.Name) {
			g := GroupOf(f.Name)
			byGroup[g] = append(byGroup[g], f)
		}
	})
	for g, flags := range byGroup {
		order := groupFlags[g]
		slices.SortStableFunc(flags, func(a, b *flag.Flag) int {
			ia, ib := slices.Index(order, a.Name), slices.Index(order, b.Name)
			switch {
			case ia >= 0 && ib >= 0:
				return ia - ib
			case ia >= 0:
				return -1
			case ib >= 0:
				return 1
			}
			return 0 // flags no group names, by name
		})
	}
	return byGroup
}

// dashes is how a subcommand's own flag is written: -o, --timeout.
func dashes(name string) string {
	if len(name) == 1 {
		return "-"
	}
	return "--"
}

// printFlag writes one flag as flag.PrintDefaults does, after the dashes
// given.
func printFlag(w io.Writer, f *flag.Flag, dashes string) {
	typ, usage := flag.UnquoteUsage(f)
	line := "  " + dashes + f.Name
	if typ != "" {
		line += " " + typ
	}
	fmt.Fprintln(w, line)
	usage = strings.ReplaceAll(usage, "\n", "\n    \t")
	switch {
	case f.DefValue == "" || f.DefValue == "false" || f.DefValue == "0":
	case typ == "string":
		usage += fmt.Sprintf(" (default %q)", f.DefValue)
	default:
		usage += fmt.Sprintf(" (default %s)", f.DefValue)
	}
	fmt.Fprintf(w, "    \t%s\n", usage)
}
