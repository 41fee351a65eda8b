package contract

import (
	"slices"
	"strings"
)

// A key the contract does not know is a vendor's own key (controllers add
// theirs, and they stay allowed) or a typo of a contract key, which would
// silently change what the volume is: sorce=//files/data without source
// makes a disk volume named after the volume ID. An unknown key within a
// small edit distance of a contract key is therefore refused with the key
// it probably means; a vendor key that close to one of ours is either in
// vendorKeys or mapped with --context-alias (aliases apply before the
// check).

// typoDistance is the largest edit distance at which an unknown key is
// taken for a typo of a contract key of length n: one edit (a letter
// missing, extra, wrong, or two letters swapped) for short keys, two for
// keys of eight characters or more.
func typoDistance(n int) int {
	if n < 8 {
		return 1
	}
	return 2
}

// vendorKeys are keys real controllers put in volume_context that lie
// within typoDistance of a contract key (folded). They are a vendor's,
// never a typo of ours: logged as unknown, not refused.
var vendorKeys = map[string]string{
	// democratic-csi's iSCSI volume_context: portal (one address),
	// portals, interface, iqn, lun (democratic-csi/democratic-csi@8a4a28a
	// src/driver/controller-zfs-generic/index.js). Map it with
	// --context-alias portal=targetPortal to use it.
	"portal": "democratic-csi",
	// vsphere-csi-driver's diskUUID (its publish_context, and a PV
	// attribute of statically provisioned volumes): two edits from
	// diskNGUID. The vsphere preset reads it (pkg/contract/disk.go).
	"diskuuid": "vsphere-csi-driver",
}

// didYouMean returns the contract keys (canonical spelling) closest to the
// unknown key k within typoDistance, or nil. Keys with a '/' (another
// project's domain, such as storage.kubernetes.io/csiProvisionerIdentity)
// are never typos of ours.
func didYouMean(k string, known map[string]KeyDoc) []string {
	f := fold(k)
	if strings.Contains(f, "/") {
		return nil
	}
	if _, ok := vendorKeys[f]; ok {
		return nil
	}
	best, out := -1, []string(nil)
	for kf, doc := range known {
		max := typoDistance(len(kf))
		if abs(len(kf)-len(f)) > max {
			continue
		}
		d := editDistance(f, kf)
		switch {
		case d > max:
		case best < 0 || d < best:
			best, out = d, []string{doc.Name}
		case d == best:
			out = append(out, doc.Name)
		}
	}
	slices.Sort(out)
	return out
}

// suggestion is the message of a probable typo: `did you mean "source"?`.
func suggestion(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = quote(n)
	}
	return "did you mean " + strings.Join(q, " or ") + "?"
}

// editDistance is the optimal string alignment distance of a and b
// (bytes): insertions, deletions, substitutions and swaps of two adjacent
// letters each cost one.
func editDistance(a, b string) int {
	// Three rows: two back (for a swap), the previous and the current.
	prev2 := make([]int, len(b)+1)
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(b)]
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}
