package main

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/wincsi/csi-windows-node/pkg/inventory"
	"github.com/wincsi/csi-windows-node/pkg/preflight"
)

// writeTable prints the report as tables, one section each: volumes, their
// problems and publications, shared resources, what nothing explains, and
// what could not be read. Each section is its own table, so grep and awk
// see one row per line.
func writeTable(w io.Writer, rep *inventory.Report) error {
	p := &printer{w: w}

	p.section("VOLUMES", len(rep.Volumes), "VOLUME ID", "BACKEND", "STATE", "BACKED BY", "STAGING PATH")
	for _, v := range rep.Volumes {
		p.row(v.VolumeID, v.Backend, string(v.State), backedBy(v), v.StagingPath)
	}
	var problems, pubs [][]string
	for _, v := range rep.Volumes {
		for _, pr := range v.Problems {
			problems = append(problems, []string{v.VolumeID, pr.Reason, pr.Message})
		}
		for _, pub := range v.Publications {
			pubs = append(pubs, []string{v.VolumeID, pub.TargetPath})
		}
	}
	p.section("PROBLEMS", len(problems), "VOLUME ID", "REASON", "MESSAGE")
	for _, r := range problems {
		p.row(r...)
	}
	p.section("PUBLICATIONS", len(pubs), "VOLUME ID", "TARGET PATH")
	for _, r := range pubs {
		p.row(r...)
	}

	var roots [][]string
	for _, v := range rep.Volumes {
		d := v.Disk
		if v.ISCSI != nil {
			d = v.ISCSI.Disk
		}
		if d == nil || d.RootACL == "" && len(d.RootAccess) == 0 {
			continue
		}
		var asked []string
		for _, g := range d.RootAccess {
			state := "on root"
			switch {
			case g.Reason != "":
				state = g.Reason
			case !g.OnRoot:
				state = "MISSING"
			}
			asked = append(asked, g.Entry+" ("+state+")")
		}
		roots = append(roots, []string{v.VolumeID, or(strings.Join(asked, "; "), "-"), or(d.RootACL, "-")})
	}
	p.section("ROOT ACCESS", len(roots), "VOLUME ID", "VOLUMEROOTACCESS", "ROOT ACL")
	for _, r := range roots {
		p.row(r...)
	}

	p.section("SHARED RESOURCES", len(rep.Resources), "KIND", "ID", "OWNER", "STATUS", "USED BY", "NOTE")
	for _, r := range rep.Resources {
		status := r.Status
		if r.Kind == inventory.KindISCSISession {
			status = r.Target + " via " + r.Portal + ", " + status
		}
		owner := string(r.Owner)
		if r.Kept {
			owner += " (kept)"
		}
		p.row(string(r.Kind), r.ID, owner, or(status, "-"), or(strings.Join(r.UsedBy, ","), "-"), r.Note)
	}

	p.section("UNEXPLAINED", len(rep.Unexplained), "KIND", "ID", "REASON")
	for _, it := range rep.Unexplained {
		p.row(string(it.Kind), it.ID, it.Reason)
	}
	if sd := rep.StateDir; sd != nil {
		p.section("STATE DIRECTORY", 1, "PATH", "ACL", "FILES OWNED BY", "REFUSED FILES")
		acl := or(sd.ACL, "- (no Windows ACL: the directory's mode protects it)")
		p.row(sd.Path, acl, or(sd.TokenOwner, "-"), strconv.Itoa(len(sd.Refused)))
		if len(sd.Refused) > 0 {
			p.section("REFUSED JOURNAL FILES (not written by the plugin; never acted on)", len(sd.Refused), "PATH", "OWNER", "REASON")
			for _, r := range sd.Refused {
				p.row(r.Path, or(r.Owner, "-"), r.Reason)
			}
		}
	}
	if rep.Preflight != nil {
		findingsSection(p, rep.Preflight.Findings)
	}
	if len(rep.Incomplete) > 0 {
		p.section("INCOMPLETE (could not be read; the rest stands)", len(rep.Incomplete), "WHAT")
		for _, s := range rep.Incomplete {
			p.row(s)
		}
	}
	p.flush()
	return p.err
}

// findingsSection prints the preflight checks: one row each, and a fix row
// under each that has one.
func findingsSection(p *printer, fs []preflight.Finding) {
	p.section("PREFLIGHT", len(fs), "CHECK", "RESULT", "DETAIL")
	for _, f := range fs {
		p.row(f.Check, strings.ToUpper(string(f.Result)), f.Detail)
		if f.Fix != "" {
			p.row("", "", "fix: "+f.Fix)
		}
	}
}

// backedBy says in one cell what backs a volume.
func backedBy(v inventory.Volume) string {
	var parts []string
	switch {
	case v.Disk != nil:
		parts = disk(v.Disk)
		if v.Disk.DiskNumber == nil && v.Disk.Selector != "" {
			parts = append(parts, v.Disk.Selector)
		}
	case v.SMB != nil:
		parts = append(parts, or(v.SMB.Directory, v.SMB.Share))
		if v.SMB.User != "" {
			parts = append(parts, "user "+v.SMB.User)
		}
		m := "no mapping"
		if v.SMB.Mapping != "" {
			m = "mapping " + v.SMB.Mapping
			if v.SMB.MappedByPlugin {
				m += " (the plugin's)"
			}
		}
		parts = append(parts, m)
	case v.ISCSI != nil:
		parts = append(parts, v.ISCSI.Target, "LUN "+strconv.FormatUint(uint64(v.ISCSI.LUN), 10))
		up := 0
		for _, s := range v.ISCSI.Sessions {
			if s.Connected {
				up++
			}
		}
		parts = append(parts, fmt.Sprintf("%d/%d sessions connected", up, len(v.ISCSI.Sessions)))
		if v.ISCSI.Disk != nil {
			parts = append(parts, disk(v.ISCSI.Disk)...)
		}
	}
	return or(strings.Join(parts, ", "), "-")
}

func disk(d *inventory.DiskBacking) []string {
	var parts []string
	if d.DiskNumber != nil {
		s := "disk " + strconv.FormatUint(uint64(*d.DiskNumber), 10)
		if d.Offline {
			s += " (offline)"
		}
		if d.ReadOnly {
			s += " (read-only)"
		}
		parts = append(parts, s)
	}
	if d.Serial != "" {
		parts = append(parts, "serial "+d.Serial)
	}
	if d.VolumeGUID != "" {
		parts = append(parts, "volume "+d.VolumeGUID)
	}
	return parts
}

// oneLine keeps a cell on its line and in its column: a volume ID or path
// may hold any character, control characters included.
func oneLine(s string) string {
	return strings.Map(func(r rune) rune {
		if r < ' ' || r == 0x7f {
			return '?'
		}
		return r
	}, s)
}

func or(s, alt string) string {
	if s == "" {
		return alt
	}
	return s
}

// printer writes sections of tab-aligned rows, keeping the first error.
type printer struct {
	w   io.Writer
	tw  *tabwriter.Writer
	n   int // sections so far
	err error
}

func (p *printer) section(title string, rows int, header ...string) {
	p.flush()
	if p.n > 0 {
		p.print("\n")
	}
	p.n++
	p.print(fmt.Sprintf("%s (%d)\n", title, rows))
	if rows == 0 {
		p.print("none\n")
		return
	}
	p.tw = tabwriter.NewWriter(p.w, 0, 0, 2, ' ', 0)
	p.row(header...)
}

func (p *printer) row(cells ...string) {
	if p.tw == nil {
		return
	}
	for i, c := range cells {
		cells[i] = oneLine(c)
	}
	if _, err := fmt.Fprintln(p.tw, strings.Join(cells, "\t")); err != nil && p.err == nil {
		p.err = err
	}
}

func (p *printer) print(s string) {
	if _, err := io.WriteString(p.w, s); err != nil && p.err == nil {
		p.err = err
	}
}

func (p *printer) flush() {
	if p.tw == nil {
		return
	}
	if err := p.tw.Flush(); err != nil && p.err == nil {
		p.err = err
	}
	p.tw = nil
}
