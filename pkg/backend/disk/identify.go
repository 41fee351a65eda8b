package disk

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/wincsi/csi-windows-node/pkg/contract"
	"github.com/wincsi/csi-windows-node/pkg/host"
)

// verdict is what a selector says about one disk.
type verdict int

const (
	no    verdict = iota // not the disk
	yes                  // the disk, for certain
	maybe                // possibly the disk: its identity cannot be read for certain
)

// judge applies every field the selector sets to disk d. The fields read
// from MSFT_Disk come first; identifiers that cost an IOCTL per disk (page
// 83 designators, the SCSI address) are read only for disks every other
// field already matched, and never for a disk that can never be chosen.
// A failure to read one of them never ends the lookup: a device that does
// not implement the IOCTL has no such identifier (but its UniqueId may
// still name it, unreadIDs); after any other failure the disk may match.
func (b *Backend) judge(ctx context.Context, d host.Disk, sel contract.DiskSelector, sc scope) (verdict, string) {
	if !matchesFields(d, sel, sc) {
		return no, ""
	}
	_, excluded := neverChosen(d)
	r := &reader{b: b, d: d, skip: excluded}
	v, why := identifiers(ctx, r, sel)
	if v != no {
		if pv, pwhy := sc.platform(ctx, r, sel); pv != yes {
			v, why = pv, pwhy
		}
	}
	if v == maybe && excluded {
		// Its identifiers were not read: a disk that is never chosen
		// cannot make the choice uncertain either.
		return no, ""
	}
	return v, why
}

// matchesFields applies the selector fields read from MSFT_Disk.
func matchesFields(d host.Disk, sel contract.DiskSelector, sc scope) bool {
	switch {
	case sel.Number != nil && d.Number != *sel.Number,
		sel.Serial != "" && !matchString(d.SerialNumber, sel.Serial, sel.SerialMatch),
		sel.Location != "" && !strings.EqualFold(strings.TrimSpace(d.Location), strings.TrimSpace(sel.Location)),
		sel.AdapterSerial != "" && !matchString(d.AdapterSerialNumber, sel.AdapterSerial, contract.MatchExact),
		sel.NVMeNSID != nil && !d.IsNVMe(),
		sel.VSphereUUID != "" && d.IsNVMe():
		return false
	}
	if sel.LUN != nil || sel.Target != nil || sel.Bus != nil {
		loc, ok := d.SCSILocation()
		if !ok || !eq(sel.LUN, loc.LUN) || !eq(sel.Target, loc.Target) || !eq(sel.Bus, loc.Bus) {
			return false
		}
	}
	return sc.inScope(d, sel)
}

// eq is true when want is unset or equals got.
func eq(want, got *uint32) bool {
	if want == nil {
		return true
	}
	return got != nil && *got == *want
}

// reader reads one disk's IOCTL-backed identifiers at most once each.
type reader struct {
	b    *Backend
	d    host.Disk
	skip bool // a disk never chosen: nothing is read

	ids     []host.Designator
	idsRead bool
	idsErr  error
	addr    *host.SCSIAddress
	addrErr error
}

// deviceIDs returns the disk's designators; none when they cannot be read
// (idsErr says why).
func (r *reader) deviceIDs(ctx context.Context) []host.Designator {
	if r.skip || r.idsRead {
		return r.ids
	}
	r.idsRead = true
	ids, err := r.b.h.Disks.DeviceIDs(ctx, r.d)
	if err != nil {
		logSkip(ctx, r.d, "device identifiers", err)
		r.idsErr = err
		return nil
	}
	r.ids = ids
	return ids
}

// page83Is says whether the disk's page 83 value (csi-proxy's, host.Page83)
// satisfies match. A disk whose device-ID page cannot be read is judged by
// unreadIDs.
func (r *reader) page83Is(ctx context.Context, match func(string) bool) (verdict, string) {
	if id, ok := host.Page83(r.deviceIDs(ctx)); ok && match(id) {
		return yes, ""
	}
	return r.unreadIDs(match)
}

// unreadIDs judges a disk whose device identifiers a selector needs but
// that were not read: a failure other than ErrNotFound (the device did not
// answer this time: busy, access denied, gone) leaves the disk a possible
// match; a device that does not implement the query (ErrNotFound) still
// shows, for free, MSFT_Disk.UniqueId, the page 83 identifier Windows chose
// ("the unique ID ... that is used to tell whether two objects are the
// same", MSFT_StorageObject,
// learn.microsoft.com/windows-hardware/drivers/storage/msft-storageobject):
// when that is the value looked for, the disk may be the one (a clone of a
// VHDX, say), and a disk that answered cannot be told from it.
func (r *reader) unreadIDs(match func(string) bool) (verdict, string) {
	switch {
	case r.idsErr == nil:
		return no, ""
	case !errors.Is(r.idsErr, host.ErrNotFound):
		return maybe, fmt.Sprintf("its device-ID page cannot be read: %v", r.idsErr)
	case strings.TrimSpace(r.d.UniqueID) != "" && match(r.d.UniqueID):
		return maybe, fmt.Sprintf("it does not answer the device-ID query, and its UniqueId %q (%s) is the identifier looked for",
			r.d.UniqueID, r.d.UniqueIDFormat)
	}
	return no, ""
}

// address returns the disk's SCSI address, or nil.
func (r *reader) address(ctx context.Context) *host.SCSIAddress {
	if r.skip || r.addr != nil || r.addrErr != nil {
		return r.addr
	}
	a, err := r.b.h.Disks.SCSIAddress(ctx, r.d)
	if err != nil {
		logSkip(ctx, r.d, "SCSI address", err)
		r.addrErr = err
		return nil
	}
	r.addr = &a
	return r.addr
}

// identifiers applies the selector fields that may need the disk's
// IOCTL-backed identifiers: page 83, EUI-64, NGUID and namespace ID.
func identifiers(ctx context.Context, r *reader, sel contract.DiskSelector) (verdict, string) {
	var v verdict
	var why string
	if sel.Page83 != "" {
		v, why = r.page83Is(ctx, func(id string) bool { return matchPage83(id, sel.Page83, sel.Page83Match) })
		if v == no {
			return no, ""
		}
	}
	for _, want := range []struct {
		id   string
		kind func(host.Designator) bool
	}{{sel.EUI, host.Designator.IsEUI64}, {sel.NGUID, host.Designator.IsNGUID}} {
		if want.id == "" {
			continue
		}
		iv, iwhy := hasNVMeID(ctx, r, want.id, want.kind)
		if iv == no {
			return no, ""
		}
		if iv == maybe {
			v, why = maybe, iwhy
		}
	}
	if sel.NVMeNSID != nil {
		if nv, nwhy := r.storportLUN(ctx).namespace(*sel.NVMeNSID); nv != yes {
			return nv, nwhy
		}
	}
	if v == maybe {
		return maybe, why
	}
	return yes, ""
}

// hasNVMeID reports whether the disk carries an EUI-64 or NGUID (hex, lower
// case): as its serial number, which Windows writes as the identifier in
// groups of four hex digits ("E6D8_6642_…_AF1B.", kubernetes-sigs/azuredisk-csi-driver#3329;
// "10CC_9636_…_0000.", kubernetes-sigs/gcp-compute-persistent-disk-csi-driver@b560165
// pkg/mount-manager/safe-mounter-v1_windows.go), as its UniqueId when that
// came from an EUI64 designator, or as a device-ID designator of that kind.
//
// A disk whose designators cannot be read is judged by unreadIDs, its
// UniqueId of any format compared as hex.
func hasNVMeID(ctx context.Context, r *reader, want string, kind func(host.Designator) bool) (verdict, string) {
	if serialHex(r.d.SerialNumber) == want ||
		r.d.UniqueIDFormat == host.UniqueIDEUI64 && serialHex(r.d.UniqueID) == want {
		return yes, ""
	}
	for _, id := range r.deviceIDs(ctx) {
		if kind(id) && id.Text() == want {
			return yes, ""
		}
	}
	return r.unreadIDs(func(u string) bool { return hexOf(u) == want })
}

// hexOf returns s in lower case without dashes when that is hex, else "".
func hexOf(s string) string {
	h := strings.ToLower(strings.ReplaceAll(strings.TrimSpace(s), "-", ""))
	if !isHex(h) {
		return ""
	}
	return h
}

// serialHex returns an NVMe serial's identifier as hex in lower case, or
// "" when the serial is not hex groups ("E6D8_6642_…_AF1B." gives
// "e6d8664250d847bd916eaf1b…").
func serialHex(s string) string {
	h := strings.ToLower(strings.ReplaceAll(normalizeSerial(s), "_", ""))
	if len(h) != 16 && len(h) != 32 || !isHex(h) {
		return ""
	}
	return h
}

// lunReading is what a disk's storport LUN may be.
type lunReading struct {
	values []uint8 // one value: certain; two: the path reads both ways
	source string  // sourceIOCTL or sourcePath
	// conflict says how the sources contradict each other.
	conflict string
}

// storportLUN reads the disk's storport LUN: from IOCTL_SCSI_GET_ADDRESS,
// cross-checked with the device path when both answer; from the device
// path alone when the IOCTL does not answer (pathLUN).
func (r *reader) storportLUN(ctx context.Context) lunReading {
	path, pathOK := pathLUN(r.d.Path)
	a := r.address(ctx)
	switch {
	case a == nil && r.addrErr != nil && !errors.Is(r.addrErr, host.ErrNotFound):
		// The IOCTL failed this time (unreadIDs): what it would have said
		// is unknown, and the path may disagree with it.
		return lunReading{conflict: fmt.Sprintf("IOCTL_SCSI_GET_ADDRESS cannot be read: %v", r.addrErr)}
	case a != nil && pathOK && !slices.Contains(path, a.LUN):
		return lunReading{conflict: fmt.Sprintf("IOCTL_SCSI_GET_ADDRESS reports LUN %d, its device path %s", a.LUN, readings(path))}
	case a != nil:
		return lunReading{values: []uint8{a.LUN}, source: sourceIOCTL}
	case pathOK:
		return lunReading{values: path, source: sourcePath}
	}
	return lunReading{}
}

// Where a storport LUN was read.
const (
	sourceIOCTL = "IOCTL_SCSI_GET_ADDRESS"
	sourcePath  = "device path"
)

// namespace says whether the disk is NVMe namespace nsid. Under stornvme a
// namespace is storport LUN NSID − 1 (the SCSIAddress doc comment in
// pkg/host), which IOCTL_SCSI_GET_ADDRESS reports. The device path alone
// does not settle it: azuredisk-csi-driver reads the number in the path as
// the NSID itself (PR #3632: "…&0&000001#…" is "NSID=1, so LUN=0";
// kubernetes-sigs/azuredisk-csi-driver@d983d61 pkg/os/disk/disk.go,
// getNVMeLunFromPath, and its test "valid path with NSID 10 (LUN 9)"),
// where this plugin reads it as the storport LUN, NSID − 1; and
// Azure/azure-vm-utils@4113392 doc/disk-identification.md warns that the
// LUN arithmetic "may be different for Windows VMs". A disk the path rules
// out under both readings is not the namespace; one it names under either
// may be (the azure-disk preset is unaffected: both readings put Azure LUN
// L at the path's L + 1).
func (l lunReading) namespace(nsid uint32) (verdict, string) {
	v, why := l.is(nsid - 1)
	if l.source != sourcePath || v == maybe {
		return v, why
	}
	if alt, _ := l.is(nsid); v == no && alt == no {
		return no, ""
	}
	return maybe, fmt.Sprintf("IOCTL_SCSI_GET_ADDRESS does not answer, and its device path alone does not tell namespace %d: "+
		"the path %s, namespace LUN + 1 as storport numbers namespaces (LUN = NSID - 1), the LUN itself as "+
		"azuredisk-csi-driver PR #3632 reads the path", nsid, readings(l.values))
}

// is says whether the disk is at storport LUN want.
func (l lunReading) is(want uint32) (verdict, string) {
	switch {
	case l.conflict != "":
		return maybe, l.conflict
	case len(l.values) == 0:
		return maybe, "no namespace ID: IOCTL_SCSI_GET_ADDRESS does not answer and the device path is not storport's"
	case want > 0xff || !slices.Contains(l.values, uint8(want)):
		return no, ""
	case len(l.values) > 1:
		return maybe, "its " + l.source + " " + readings(l.values)
	}
	return yes, ""
}

func readings(v []uint8) string {
	if len(v) == 1 {
		return fmt.Sprintf("reads as LUN %d", v[0])
	}
	return fmt.Sprintf("reads as LUN %d (hex) or %d (decimal)", v[0], v[1])
}

// pathLUN reads the LUN from a storport device path, whose device instance
// ID ends in six characters that appear to be path, target and LUN, two
// each: "\\?\scsi#disk&ven_msft&prod_virtual_disk#5&23db5f40&0&000001#{…}" is
// the disk at "Port 0 : Target 0 : LUN 1" (kubernetes-sigs/azuredisk-csi-driver#2661,
// where Get-Disk shows both). Whether the digits are hex or decimal is not
// documented and no public example shows a value above 9, so both readings
// are returned when they differ ("10": 16 or 10); "0a" is hex only. A path
// that is not storport's ("\\?\scsi#…") has no such tail.
func pathLUN(path string) ([]uint8, bool) {
	p := strings.ToLower(path)
	if !strings.HasPrefix(p, `\\?\scsi#`) {
		return nil, false
	}
	parts := strings.Split(p, "#")
	if len(parts) < 4 {
		return nil, false
	}
	inst := parts[len(parts)-2]
	tail := inst[strings.LastIndexByte(inst, '&')+1:]
	if len(tail) != 6 || !isHex(tail) {
		return nil, false
	}
	lun := tail[4:]
	hexV := unhex(lun[0])<<4 | unhex(lun[1])
	if lun[0] > '9' || lun[1] > '9' {
		return []uint8{hexV}, true
	}
	if dec := (lun[0]-'0')*10 + lun[1] - '0'; dec != hexV {
		return []uint8{hexV, dec}, true
	}
	return []uint8{hexV}, true
}

func unhex(c byte) uint8 {
	if c <= '9' {
		return c - '0'
	}
	return c - 'a' + 10
}

// ephemeral reports the temporary disks a cloud attaches to the instance
// itself, which lose their contents with it and are never a volume:
//   - Azure's local NVMe disks, model "Microsoft NVMe Direct Disk" and "…
//     v2" (Azure/azure-vm-utils@4113392 udev/80-azure-disk.rules);
//   - EC2 instance-store disks: product "Amazon EC2 NVMe Instance Storage"
//     (what nvme-cli shows on Linux; Windows prefixes "NVMe " and may cut
//     FriendlyName to "NVMe Amazon EC2 NVMe", seen in user scripts, not
//     verified), serial "AWS…" where EBS volumes have "vol…";
//   - Google's local SSDs on NVMe, model "nvme_card" where persistent disks
//     have "nvme_card-pd" (kubernetes-sigs/gcp-compute-persistent-disk-csi-driver@b560165
//     pkg/gce-pd-csi-driver/cache.go and deploy/kubernetes/udev/google_nvme_id;
//     the Windows model is not verified).
//
// Excluding more disks than needed only makes a lookup refuse; it never
// picks a wrong disk.
func ephemeral(d host.Disk) (string, bool) {
	name := strings.ToLower(d.FriendlyName + " " + d.Model)
	switch {
	case strings.Contains(name, "nvme direct disk"):
		return "an Azure local (temporary) NVMe disk", true
	case strings.Contains(name, "amazon ec2 nvme"),
		d.IsNVMe() && strings.HasPrefix(strings.TrimSpace(d.SerialNumber), "AWS"):
		return "an EC2 instance-store (temporary) disk", true
	case strings.Contains(strings.ReplaceAll(name, "nvme_card-pd", ""), "nvme_card"):
		return "a Google local SSD (temporary)", true
	}
	return "", false
}

// normalizeSerial trims what disks commonly pad serials with (spaces, and a
// trailing '.' on NVMe serials such as AWS's "vol02190fee5da4d75e3_00000001.",
// kubernetes-csi/csi-proxy PR #116).
func normalizeSerial(s string) string {
	return strings.TrimRight(strings.TrimSpace(s), ".")
}

// matchString compares a disk property with a selector value. A blank
// property never matches: serials can be blank (Hyper-V VHDs, csi-proxy PR
// #116) or padding (twenty spaces on GCE, csi-proxy@eeba470
// integrationtests/disk_v1_test.go).
func matchString(have, want string, mode contract.MatchMode) bool {
	have, want = normalizeSerial(have), normalizeSerial(want)
	if have == "" || want == "" {
		return false
	}
	switch mode {
	case contract.MatchContains:
		return strings.Contains(strings.ToLower(have), strings.ToLower(want))
	case contract.MatchLastField:
		f := strings.Fields(have)
		return strings.EqualFold(f[len(f)-1], want)
	default:
		return strings.EqualFold(have, want)
	}
}

// matchPage83 compares page 83 identifiers. Binary identifiers are hex
// strings; the contract lower-cases hex selectors and drops dashes, so the
// host's value gets the same treatment when it is hex.
func matchPage83(have, want string, mode contract.MatchMode) bool {
	if mode == contract.MatchExact {
		h := strings.TrimSpace(have)
		if isHex(strings.ReplaceAll(h, "-", "")) {
			h = strings.ToLower(strings.ReplaceAll(h, "-", ""))
		}
		return h != "" && h == strings.TrimSpace(want)
	}
	return matchString(have, want, mode)
}

func isHex(s string) bool {
	return s != "" && strings.Trim(s, "0123456789abcdefABCDEF") == ""
}

// checkSelector refuses a selector the lookup must not run with: a
// platform value of the wrong shape, which the contract never produces but
// a journal record written by hand could hold.
func checkSelector(sel contract.DiskSelector) error {
	if sel.EBSVolumeID != "" {
		h, ok := strings.CutPrefix(sel.EBSVolumeID, "vol-")
		if !ok || len(h) < 8 || !isHex(h) || strings.ToLower(h) != h {
			return fmt.Errorf("%q is not an EBS volume ID (vol- and 8 or more lower-case hex digits): %w", sel.EBSVolumeID, host.ErrInvalid)
		}
	}
	if sel.IsZero() {
		return fmt.Errorf("an empty disk selector names no disk: %w", host.ErrInvalid)
	}
	return nil
}
