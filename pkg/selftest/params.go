package selftest

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/wincsi/csi-windows-node/pkg/contract"
	"github.com/wincsi/csi-windows-node/pkg/plugin"
)

// Params returns what a recording's header keeps of a run's configuration:
// enough to run the same steps again with the same names over the
// recording (ConfigFromParams). Secrets are not in it.
func (c Config) Params() map[string]string {
	c = c.withDefaults()
	p := map[string]string{
		"run":                  c.Run,
		"backends":             strings.Join(c.Backends, ","),
		"workDir":              c.WorkDir,
		"diskSize":             strconv.FormatUint(c.DiskSize, 10),
		"growTo":               strconv.FormatUint(c.GrowTo, 10),
		"offlineDiskOnUnstage": strconv.FormatBool(c.Plugin.OfflineDiskOnUnstage),
		"smbKeepMappings":      strconv.FormatBool(c.Plugin.SMBKeepMappings),
		"keepISCSIPortals":     strconv.FormatBool(c.Plugin.KeepISCSIPortals),
		"smbRequirePrivacy":    strconv.FormatBool(c.Plugin.Contract.RequirePrivacy),
		"smbDefaultDomain":     c.Plugin.Contract.DefaultDomain,
		"smbLocal":             strconv.FormatBool(c.SMB.Local),
		"smbSource":            c.SMB.Source,
		"smbUser":              c.SMB.User,
		"iscsiPortal":          c.ISCSI.Portal,
		"iscsiIQN":             c.ISCSI.IQN,
		"iscsiLUN":             strconv.FormatUint(uint64(c.ISCSI.LUN), 10),
		"iscsiCHAPUser":        c.ISCSI.CHAPUser,
	}
	for k, v := range p {
		if v == "" {
			delete(p, k)
		}
	}
	return p
}

// ConfigFromParams returns the configuration Params describes. Passwords
// and CHAP secrets, which a recording never holds, are left random or
// empty; a replay matches them by name only.
func ConfigFromParams(p map[string]string) (Config, error) {
	c := Config{
		Run: p["run"], WorkDir: p["workDir"],
		SMB:    SMBTarget{Source: p["smbSource"], User: p["smbUser"]},
		ISCSI:  ISCSITarget{Portal: p["iscsiPortal"], IQN: p["iscsiIQN"], CHAPUser: p["iscsiCHAPUser"]},
		Plugin: plugin.Options{Contract: contract.Options{DefaultDomain: p["smbDefaultDomain"]}},
	}
	if b := p["backends"]; b != "" {
		c.Backends = strings.Split(b, ",")
	}
	var errs []string
	u64 := func(key string, into *uint64) {
		if v, ok := p[key]; ok {
			n, err := strconv.ParseUint(v, 10, 64)
			if err != nil {
				errs = append(errs, key)
			}
			*into = n
		}
	}
	flag := func(key string, into *bool) {
		if v, ok := p[key]; ok {
			b, err := strconv.ParseBool(v)
			if err != nil {
				errs = append(errs, key)
			}
			*into = b
		}
	}
	u64("diskSize", &c.DiskSize)
	u64("growTo", &c.GrowTo)
	var lun uint64
	u64("iscsiLUN", &lun)
	c.ISCSI.LUN = uint32(lun)
	flag("offlineDiskOnUnstage", &c.Plugin.OfflineDiskOnUnstage)
	flag("smbKeepMappings", &c.Plugin.SMBKeepMappings)
	flag("keepISCSIPortals", &c.Plugin.KeepISCSIPortals)
	flag("smbRequirePrivacy", &c.Plugin.Contract.RequirePrivacy)
	flag("smbLocal", &c.SMB.Local)
	if len(errs) > 0 || lun > 1<<32-1 {
		return Config{}, fmt.Errorf("recorded parameters %s do not parse", strings.Join(errs, ", "))
	}
	return c, c.check()
}
