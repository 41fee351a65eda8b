package winhost

import (
	"errors"
	"fmt"

	"github.com/wincsi/csi-windows-node/pkg/host"
)

// Return values of the Windows Storage Management API methods (the MSFT_*
// classes in Root\Microsoft\Windows\Storage), with their documented message
// and the host sentinel each one means to the plugin.
//
// Sources, all under learn.microsoft.com/windows-hardware/drivers/storage/
// (checked against the MicrosoftDocs/windows-driver-docs sources):
//   - storage-management-api-common-return-codes ("common page"): the
//     standard CIM codes 0-8, the extended CIM codes 4096-4099 and the
//     ranges 40000 (common), 41000 (disk), 42000 (partition), 43000 (volume);
//   - the method pages of the methods the plugin calls: msft-disk-online,
//     msft-disk-offline, msft-disk-setattributes, initialize-msft-disk,
//     createpartition-msft-disk, msft-partition-getsupportedsizes,
//     msft-partition-resize, format-msft-volume,
//     msft-storagesetting-updatehoststoragecache (which documents no return
//     values; only the common codes apply).
//
// Where the two disagree the method page wins for that class: the method
// pages give the Failover Clustering code as 41018 for MSFT_Disk methods and
// 40018 for MSFT_Volume.Format, the common page lists only 40018; both are
// kept. Codes 41015, 41016 and 41017 appear only on the CreatePartition page.
// Every entry below is on one of those pages.

// codeInfo is the documented meaning of one return value.
type codeInfo struct {
	msg string
	// sentinel is what the code means to the plugin; nil leaves the
	// failure without a host meaning (an internal error).
	sentinel error
}

// codeTable maps the return values of one class's methods.
type codeTable map[uint32]codeInfo

// Standard and extended CIM codes and the common 40000 range (common page).
var commonCodes = codeTable{
	1:    {"not supported", nil},
	2:    {"unspecified error", nil},
	3:    {"timeout", host.ErrNotReady},
	4:    {"failed", nil},
	5:    {"invalid parameter", host.ErrInvalid},
	6:    {"in use", host.ErrInUse},
	7:    {"this command is not supported on x86 running in x64 environment", nil},
	8:    {"object not found", host.ErrNotFound},
	4096: {"method parameters checked - job started", nil}, // the plugin never asks for a job
	4097: {"size not supported", host.ErrOutOfRange},
	4098: {"timeout not supported", nil},
	4099: {"the device is busy", host.ErrInUse},

	40000: {"not enough available capacity", host.ErrOutOfRange},
	40001: {"access denied", host.ErrAccessDenied},
	40002: {"there are not enough resources to complete the operation", host.ErrNotReady},
	40003: {"cache out of date", host.ErrNotReady},
	40004: {"an unexpected I/O error has occurred", nil},
	40005: {"you must specify a size by using either the Size or the UseMaximumSize parameter", host.ErrInvalid},
	40006: {"the object or object type requested does not exist in cache", host.ErrNotFound},
	40007: {"the request failed due to a fatal device hardware error", nil},
	40018: {"the object is managed by the Microsoft Failover Clustering component", host.ErrConflict},
}

// MSFT_Disk: the 41000 range (common page; 41015-41018 from the
// CreatePartition, Online, Offline, SetAttributes and Initialize pages) and
// the partition codes CreatePartition documents.
var diskCodes = withCommon(codeTable{
	6:     {"disk is in use", host.ErrInUse},
	41000: {"the disk has not been initialized", host.ErrConflict},
	41001: {"the disk has already been initialized", host.ErrAlreadyExists},
	41002: {"the disk is read only", host.ErrReadOnly},
	41003: {"the disk is offline", host.ErrNotReady},
	41004: {"the disk's partition limit has been reached", host.ErrConflict},
	41005: {"the specified partition alignment is not valid", host.ErrInvalid},
	41006: {"a parameter is not valid for this type of partition", host.ErrInvalid},
	41007: {"cannot clear with OEM partitions present", host.ErrConflict},
	41008: {"cannot clear with data partitions present", host.ErrConflict},
	41009: {"operation not supported on a critical disk", host.ErrConflict},
	41010: {"the specified partition type is not valid", host.ErrInvalid},
	41011: {"only the first 2 TB are usable on MBR disks", host.ErrOutOfRange},
	41012: {"the specified offset is not valid", host.ErrInvalid},
	41013: {"cannot convert the style of a disk with data or other known partitions on it", host.ErrConflict},
	41014: {"the disk is not large enough to support a GPT partition style", host.ErrOutOfRange},
	41015: {"there is no media in the device", host.ErrNotReady},
	41016: {"the specified offset is not valid", host.ErrInvalid},
	41017: {"the specified partition layout is invalid", host.ErrConflict},
	41018: {"the object is managed by the Microsoft Failover Clustering component", host.ErrConflict},
	42002: {"the requested access path is already in use", host.ErrAlreadyExists},
	42004: {"cannot assign access paths to hidden partitions", host.ErrInvalid},
	42007: {"the access path is not valid", host.ErrInvalid},
})

// MSFT_Partition: the 42000 range (common page; GetSupportedSize and Resize
// document 4097, 42008 and 42009).
var partitionCodes = withCommon(codeTable{
	42000: {"the partition was deleted, although its access paths were not", nil},
	42001: {"the extended partition still contains other partitions", host.ErrConflict},
	42002: {"the requested access path is already in use", host.ErrAlreadyExists},
	42004: {"cannot assign access paths to hidden partitions", host.ErrInvalid},
	42005: {"cannot remove a volume GUID path", host.ErrInvalid},
	42006: {"cannot remove the drive letter of a boot or paging file partition", host.ErrConflict},
	42007: {"the access path is not valid", host.ErrInvalid},
	42008: {"cannot shrink a partition containing a volume with errors", host.ErrConflict},
	42009: {"cannot resize a partition containing an unknown file system", host.ErrConflict},
	42010: {"the operation is not allowed on a system or critical partition", host.ErrConflict},
	42011: {"this operation is only supported on data partitions", host.ErrConflict},
	42012: {"cannot assign multiple drive letters to a partition", host.ErrInvalid},
	42013: {"cannot assign drive letter to this type of partition", host.ErrInvalid},
})

// MSFT_Volume: the 43000 range (common page) and the codes Format documents
// (42010, 43000-43006).
var volumeCodes = withCommon(codeTable{
	42010: {"the operation is not allowed on a system or critical partition", host.ErrConflict},
	43000: {"the specified cluster size is invalid", host.ErrInvalid},
	43001: {"the specified file system is not supported", host.ErrInvalid},
	43002: {"the volume cannot be quick formatted", host.ErrConflict},
	43003: {"the number of clusters exceeds 32 bits", host.ErrOutOfRange},
	43004: {"the specified UDF version is not supported", host.ErrInvalid},
	43005: {"the cluster size must be a multiple of the disk's physical sector size", host.ErrInvalid},
	43006: {"cannot perform the requested operation when the drive is read only", host.ErrReadOnly},
	43007: {"the repair failed", nil},
	43008: {"the scan failed", nil},
	43009: {"a snapshot error occurred while scanning this drive", nil},
	43010: {"a scan is already running on this drive", host.ErrInUse},
	43011: {"a snapshot error occurred while scanning this drive", nil},
	43012: {"a snapshot error occurred while scanning this drive", nil},
	43013: {"cannot open drive for direct access", host.ErrInUse},
	43014: {"cannot determine the file system of the drive", nil},
	43015: {"this setting may not be changed due to the group policy setting", host.ErrAccessDenied},
	43016: {"this setting may not be changed due to the global registry setting", host.ErrAccessDenied},
})

// Class names of the Storage Management API the disk path uses.
const (
	classDisk           = "MSFT_Disk"
	classPartition      = "MSFT_Partition"
	classVolume         = "MSFT_Volume"
	classStorageSetting = "MSFT_StorageSetting"
	assocPartToVolume   = "MSFT_PartitionToVolume"
)

// The iSCSI initiator's classes: the iSCSI statuses (iscsiCodes, iscsi.go)
// and the common codes.
var iscsiMethodCodes = withCommon(iscsiCodes)

// codesOf returns the table of a class; classes without their own table
// (MSFT_StorageSetting) use the common codes.
func codesOf(class string) codeTable {
	switch class {
	case classDisk:
		return diskCodes
	case classPartition:
		return partitionCodes
	case classVolume:
		return volumeCodes
	case classTargetPortal, classTarget, classSession, classConnection, classInitiatorSession:
		return iscsiMethodCodes
	}
	return commonCodes
}

// hresultCodes returns the table of the statuses a class's provider may
// report as the HRESULT of a failed call instead of a return value: the
// iSCSI statuses for the iSCSI classes (see iscsiCodes), none for others.
func hresultCodes(class string) codeTable {
	switch class {
	case classTargetPortal, classTarget, classSession, classConnection, classInitiatorSession:
		return iscsiCodes
	}
	return nil
}

func withCommon(t codeTable) codeTable {
	out := make(codeTable, len(commonCodes)+len(t))
	for k, v := range commonCodes {
		out[k] = v
	}
	for k, v := range t {
		out[k] = v
	}
	return out
}

// methodError is the error for a non-zero return value: a *MethodError,
// wrapped together with the host sentinel the value means. Every table
// codesOf returns holds the common codes.
func methodError(class, method string, rv uint32) error {
	info := codesOf(class)[rv]
	me := &MethodError{Class: class, Method: method, ReturnValue: rv, Message: info.msg}
	if info.sentinel == nil {
		return me
	}
	return fmt.Errorf("%w: %w", me, info.sentinel)
}

// callError gives a failed method call (an executor error) its host
// meaning: a COM failure whose HRESULT, or failing that the status in its
// extended error object (wmistatus.go), is a status of the class's
// provider (hresultCodes) carries that status's message and sentinel; any
// other error goes through mapHostErr.
func callError(class string, err error) error {
	var ce *COMError
	if errors.As(err, &ce) && ce.Lookup == "" {
		codes := hresultCodes(class)
		info, ok := codes[ce.HResult]
		if !ok {
			if st := errorObjectStatus(ce.ErrorObject); st.hasHR {
				info, ok = codes[st.hresult]
			}
		}
		if ok {
			if info.sentinel == nil {
				return fmt.Errorf("%w (%s)", err, info.msg)
			}
			return fmt.Errorf("%w (%s): %w", err, info.msg, info.sentinel)
		}
	}
	return mapHostErr(err)
}
