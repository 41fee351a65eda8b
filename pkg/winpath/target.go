package winpath

import "strings"

// LongPath returns the extended-length (\\?\) form of an absolute Windows
// path, which lifts the 260-character MAX_PATH limit of the Win32 API:
//
//	C:\x            -> \\?\C:\x
//	\\server\share\x -> \\?\UNC\server\share\x
//
// '/' becomes '\' and repeated separators collapse, because Windows does
// neither for \\?\ paths. LongPath does not interpret "." or "..": pass it
// paths that Resolve returned. Paths already in the \\?\ or \??\ form are
// returned unchanged, \\.\ device paths too (with '/' turned into '\').
// Relative, root-relative and drive-relative paths cannot be made long and
// are returned unchanged.
func LongPath(p string) string {
	if strings.HasPrefix(p, `\\?\`) || strings.HasPrefix(p, `\??\`) {
		return p
	}
	s := strings.ReplaceAll(p, "/", `\`)
	switch {
	case strings.HasPrefix(s, `\\?\`), strings.HasPrefix(s, `\\.\`):
		return s
	case strings.HasPrefix(s, `\\`):
		return `\\?\UNC\` + collapseSeparators(strings.TrimLeft(s, `\`))
	case isDriveAbsolute(s):
		return `\\?\` + collapseSeparators(s)
	}
	return p
}

// UNCLinkTarget returns the target to store in a directory symlink that
// points at an SMB share or a directory in it:
//
//	\\server\share\dir -> \\?\UNC\server\share\dir\
//
// That is the long form (the UNC prefix is \\?\UNC\, "Naming Files, Paths,
// and Namespaces" on learn.microsoft.com; not \\?\ followed by
// \\server, which is what csi-proxy builds: kubernetes-csi/csi-proxy@eeba470
// pkg/os/smb/api.go prefixes \\?\ to the UNC path)
// with a trailing '\' (k8s.io/mount-utils adds it because EvalSymlinks
// fails on a share root without it: kubernetes/mount-utils v0.36.0
// mount_windows.go, golang/go#42096). Inputs already in
// the \\?\UNC\ or \??\UNC\ form are accepted. A non-UNC path gets
// LongPath plus a trailing '\'.
func UNCLinkTarget(unc string) string {
	s := strings.ReplaceAll(unc, "/", `\`)
	if hasPrefixFoldASCII(s, `\\?\UNC\`) || hasPrefixFoldASCII(s, `\??\UNC\`) {
		s = `\\` + s[len(`\\?\UNC\`):]
	}
	return WithTrailingSeparator(LongPath(s))
}

// CanonicalTarget returns a form of a Windows link target for comparisons:
// two targets name the same place if their canonical forms are equal.
//
//   - '/' becomes '\' and repeated separators collapse;
//   - \\?\UNC\ and \??\UNC\ become \\ (\\?\UNC\srv\share -> \\srv\share);
//   - other \\?\ and \??\ prefixes are stripped (\??\C:\x -> C:\x), except
//     for volume GUID paths, which become \\?\volume{guid} so that they
//     cannot be confused with a relative name "Volume{...}";
//   - a trailing '\' is removed, except from a drive root (C:\);
//   - ASCII letters are lower-cased. Other letters are kept as they are:
//     NTFS folds them with a per-volume table we cannot see (see
//     equalFoldASCII), so "same" is only claimed when certain. The cost is
//     that two spellings of a non-ASCII name differing in case compare
//     unequal.
//
// It does not interpret "." or "..", and does not make relative targets
// absolute; callers compare targets they wrote with targets they read.
func CanonicalTarget(s string) string {
	t := strings.ReplaceAll(s, "/", `\`)
	if hasPrefixFoldASCII(t, `\??\`) {
		t = `\\?\` + t[4:]
	}
	if g, ok := VolumeGUIDPath(t); ok {
		return `\\?\volume` + strings.TrimSuffix(g[len(`\\?\Volume`):], `\`)
	}
	switch {
	case hasPrefixFoldASCII(t, `\\?\UNC\`):
		t = `\\` + t[len(`\\?\UNC\`):]
	case strings.HasPrefix(t, `\\?\`):
		t = t[4:]
	}
	t = collapseSeparators(t)
	if strings.HasSuffix(t, `\`) && strings.TrimRight(t, `\`) != "" && !(len(t) == 3 && isDriveAbsolute(t)) {
		t = t[:len(t)-1]
	}
	b := []byte(t)
	for i := range b {
		b[i] = lowerASCII(b[i])
	}
	return string(b)
}

// IsVolumeGUIDPath reports whether s is a volume GUID path,
// \\?\Volume{xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx} with an optional
// trailing '\'. "Volume" and the hex digits may be in any case.
func IsVolumeGUIDPath(s string) bool {
	_, ok := VolumeGUIDPath(s)
	return ok
}

// VolumeGUIDPath returns s in the canonical form \\?\Volume{guid}\ (GUID
// lower-case, trailing '\', the form SetVolumeMountPoint and
// GetVolumeNameForVolumeMountPoint use), or false if s is not a volume
// GUID path (see IsVolumeGUIDPath).
func VolumeGUIDPath(s string) (string, bool) {
	const prefix = `\\?\Volume{`
	if !hasPrefixFoldASCII(s, prefix) {
		return "", false
	}
	rest := s[len(prefix):]
	const guidLen = 36 // 8-4-4-4-12
	switch {
	case len(rest) == guidLen+1 && rest[guidLen] == '}':
	case len(rest) == guidLen+2 && rest[guidLen] == '}' && rest[guidLen+1] == '\\':
	default:
		return "", false
	}
	guid := []byte(rest[:guidLen])
	for i, c := range guid {
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return "", false
			}
		default:
			c = lowerASCII(c)
			if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
				return "", false
			}
			guid[i] = c
		}
	}
	return `\\?\Volume{` + string(guid) + `}\`, true
}

// WithTrailingSeparator returns p ending in '\' (SetVolumeMountPoint and
// DeleteVolumeMountPoint need it): p itself if it ends in '\', p with a
// final '/' replaced by '\', otherwise p + '\'.
func WithTrailingSeparator(p string) string {
	switch {
	case strings.HasSuffix(p, `\`):
		return p
	case strings.HasSuffix(p, "/"):
		return p[:len(p)-1] + `\`
	}
	return p + `\`
}

// isDriveAbsolute reports whether s starts with "X:\".
func isDriveAbsolute(s string) bool {
	return len(s) >= 3 && isASCIILetter(s[0]) && s[1] == ':' && s[2] == '\\'
}

// collapseSeparators turns every run of '\' in s into one, except that a
// leading "\\" (UNC) stays.
func collapseSeparators(s string) string {
	if !strings.Contains(s, `\\`) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	start := 0
	if strings.HasPrefix(s, `\\`) {
		b.WriteString(`\\`)
		start = len(s) - len(strings.TrimLeft(s, `\`))
	}
	for i := start; i < len(s); i++ {
		if s[i] == '\\' && i > start && s[i-1] == '\\' {
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
