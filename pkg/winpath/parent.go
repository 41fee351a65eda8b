package winpath

import "strings"

// Parent returns the directory holding p, a path of either style, and
// false when there is none: p is empty, a root, or one relative name.
//
//	/var/lib/kubelet/x      -> /var/lib/kubelet
//	/x                      -> /
//	C:\var\x\               -> C:\var       (trailing separators ignored)
//	C:\x                    -> C:\
//	\\server\share\dir\x    -> \\server\share\dir
//	\\server\share\x        -> \\server\share
//	\\?\C:\x                -> \\?\C:\
//	/, C:\, C:, \\server\share, \\?\UNC\server\share, \\?\Volume{guid}\ -> false
//
// '\' and '/' both separate; a run of separators counts as one. The parent
// has no trailing separator unless it is a root, which keeps the form it
// has in p (its own separator for "/" and "C:\", none for a share root).
// Parent is a string function: it does not interpret "." or "..", so pass
// it paths that Resolve returned or that the host reported.
func Parent(p string) (string, bool) {
	n := rootLen(p)
	rest := strings.TrimRight(p[n:], `\/`)
	if rest == "" {
		return "", false // empty, or a root
	}
	i := strings.LastIndexAny(rest, `\/`)
	if i < 0 {
		if n == 0 {
			return "", false // one relative name
		}
		return p[:n], true
	}
	parent := strings.TrimRight(rest[:i], `\/`)
	if parent == "" {
		return p[:n], true // rest was "\name" after a share root
	}
	return p[:n] + parent, true
}

// IsRoot reports whether p, trailing separators ignored, is a root: "/" or
// "\", a drive (C:\ or C:), a share root (\\server\share) or the root of a
// device path (\\?\C:\, \\?\UNC\server\share, \\?\Volume{guid}\). Nothing
// is above a root, and the plugin never creates or removes one.
func IsRoot(p string) bool {
	n := rootLen(p)
	return n > 0 && strings.TrimRight(p[n:], `\/`) == ""
}

// rootLen returns the length of p's root prefix, 0 for a relative path:
//
//	/ or \                                      1
//	C:\ (C: without a separator: 2)             3
//	\\server\share                              up to the end of share
//	\\?\ \??\ \\.\ + UNC\server\share           up to the end of share
//	\\?\ \??\ \\.\ + first component (+ '\')    C:\, Volume{guid}\, PhysicalDrive0
//
// A UNC or device path missing its share or first component is all root.
func rootLen(p string) int {
	isSep := func(i int) bool { return i < len(p) && (p[i] == '\\' || p[i] == '/') }
	// endOf returns the index after the component starting at i.
	endOf := func(i int) int {
		for i < len(p) && !isSep(i) {
			i++
		}
		return i
	}
	switch {
	case p == "":
		return 0
	case len(p) >= 2 && isASCIILetter(p[0]) && p[1] == ':':
		if isSep(2) {
			return 3
		}
		return 2
	case !isSep(0):
		return 0
	case len(p) >= 4 && isSep(3) && (isSep(1) && (p[2] == '?' || p[2] == '.') || p[1] == '?' && p[2] == '?'):
		// \\?\, \\.\ or \??\: the device namespace.
		if len(p) >= 8 && strings.EqualFold(p[4:7], "UNC") && isSep(7) {
			return shareRootEnd(p, 8, isSep, endOf)
		}
		end := endOf(4)
		if isSep(end) {
			end++
		}
		return end
	case isSep(1):
		return shareRootEnd(p, 2, isSep, endOf)
	}
	return 1
}

// shareRootEnd returns the index after the share of a "server\share" that
// starts at i, or len(p) when either part is missing.
func shareRootEnd(p string, i int, isSep func(int) bool, endOf func(int) int) int {
	server := endOf(i)
	if server == i || !isSep(server) {
		return len(p)
	}
	share := endOf(server + 1)
	if share == server+1 {
		return len(p)
	}
	return share
}
