package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"
	"unicode/utf16"
	"unicode/utf8"

	"k8s.io/klog/v2"

	"github.com/wincsi/csi-windows-node/pkg/config"
	"github.com/wincsi/csi-windows-node/pkg/host"
	"github.com/wincsi/csi-windows-node/pkg/selftest"
	"github.com/wincsi/csi-windows-node/pkg/winhost/recording"
	"github.com/wincsi/csi-windows-node/pkg/winpath"
)

// selftestCommand proves the plugin on this node end to end.
const selftestCommand = "selftest"

const selftestUsage = `Usage: csi-windows-node selftest [--backends disk,smb,iscsi] [-o table|json] [--record FILE]
         [--smb-local | --smb-source //server/share [--smb-credentials FILE]]
         [--iscsi-portal HOST[:PORT] --iscsi-iqn IQN [--iscsi-lun N] [--iscsi-chap FILE]]
         [--work-dir DIR] [--timeout=15m] [plugin flags]

Proves the plugin on this node end to end, with nothing from a controller,
through the real node service over the real host (the NodeStageVolume of a
deployed plugin): disk stages a VHDX it makes and attaches (NTFS, then ReFS
on Windows Server), publishes it, writes and reads a file through the
publish path, reads the stats, grows the VHDX and expands the volume,
checks its health, unpublishes and unstages it (the disk goes offline),
stages it again (the file is still there), then detaches and deletes it;
smb maps a share you name, or with --smb-local one it makes on this node
with a temporary local user; iscsi logs in to a target you name. Everything
it makes is named csiwn-st-<run> and removed, even when a step fails or on
Ctrl-C; a run first removes what a killed run left, and says so. It takes
the plugin's own flags (for example --smb-require-privacy); --host=sim runs
the same steps on the simulated host. Credentials come from files, never
from flags: lines of username=, password= (and domain= for SMB).
docs/selftest.md explains each step and how to contribute a recording.

Exit status: 0 when every step passed, 1 when a step failed (or something
could not be removed), 2 for bad flags.

Flags:
`

func selftestCmd(args []string, stdout, stderr io.Writer) int {
	sc := newSubcommand(selftestCommand, selftestUsage, stdout, stderr)
	so := config.RegisterSelftest(sc.fs, runtime.GOOS, os.TempDir())
	if code, ok := sc.parse(args, func() error { return so.Finish(sc.fs) }); !ok {
		return code
	}
	opts, fail := sc.opts, sc.usageError
	// selftest builds its own plugin: the driver name is its own, and the
	// simulated host lives in the work directory unless --sim-dir says.
	if opts.DriverName == "" {
		opts.DriverName = selftest.DriverName
	}
	if opts.Host == config.HostSim && opts.SimDir == "" {
		opts.SimDir = filepath.Join(so.WorkDir, "sim")
	}
	popts, code, ok := sc.pluginOptions()
	if !ok {
		return code
	}
	if _, err := winpath.NewRoot(so.WorkDir, popts.PathStyle); err != nil {
		return fail("--work-dir: %v", err)
	}
	cfg := selftest.Config{
		Backends: so.Backends, WorkDir: so.WorkDir, Run: selftest.NewRunID(), Plugin: popts,
		SMB:   selftest.SMBTarget{Local: so.SMBLocal, Source: so.SMBSource},
		ISCSI: selftest.ISCSITarget{Portal: so.ISCSIPortal, IQN: so.ISCSIIQN, LUN: uint32(so.ISCSILUN)},
	}
	if so.SMBCredentials != "" {
		c, err := readCredentials(so.SMBCredentials, "domain")
		if err != nil {
			return fail("--smb-credentials: %v", err)
		}
		cfg.SMB.User, cfg.SMB.Password = c.user, c.password
		if c.extra != "" {
			cfg.SMB.User = c.extra + `\` + c.user
		}
	}
	if so.ISCSICHAP != "" {
		c, err := readCredentials(so.ISCSICHAP, "")
		if err != nil {
			return fail("--iscsi-chap: %v", err)
		}
		cfg.ISCSI.CHAPUser, cfg.ISCSI.CHAPSecret = c.user, c.password
	}
	var rec *record
	if so.Record != "" {
		if opts.Host != config.HostWindows {
			return fail("--record: only the Windows host's calls are recorded; --host=%s makes none", opts.Host)
		}
		rec = &record{path: so.Record, header: recording.Header{Scenario: recording.ScenarioSelftest, Params: cfg.Params()}}
	}
	defer klog.Flush()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, so.Timeout)
	defer cancel()
	ctx = klog.NewContext(ctx, klog.Background())
	n, err := newHost(ctx, opts, simSetup{}, rec)
	if err != nil {
		return sc.failed(err)
	}
	defer n.close()
	finished := make(chan struct{})
	defer close(finished)
	go func() {
		select {
		case <-ctx.Done():
			sc.printf("%v: removing what this run made", ctx.Err())
		case <-finished:
		}
	}()

	table := so.Output == "table"
	tw := &stepWriter{w: stdout}
	if table {
		cfg.Progress = tw.step
	}
	rep, err := selftest.Run(ctx, selftest.Node{Host: n.plugin.Host, Admin: n.admin, Style: popts.PathStyle, RoundTrips: n.roundTrips}, cfg)
	if n.recorder != nil && rep != nil {
		if werr := n.recorder.WriteResult(rep.Outcome()); werr != nil {
			sc.printf("--record %s: %v", so.Record, werr)
		}
	}
	if err != nil {
		return sc.failed(err)
	}
	if table {
		err = tw.summary(rep, so.Record)
	} else {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		err = enc.Encode(struct {
			*selftest.Report
			Passed bool `json:"passed"`
		}{rep, rep.Passed()})
	}
	if err != nil {
		return sc.failed(fmt.Errorf("write the report: %w", err))
	}
	if !rep.Passed() {
		return exitFailed
	}
	return exitOK
}

// credentials is a credential file's content.
type credentials struct {
	user     string
	password host.Secret
	extra    string // domain= for SMB
}

// maxCredentialsFile bounds what readCredentials reads: a few short lines.
const maxCredentialsFile = 64 << 10

// readCredentials reads a file of key=value lines: username, password and,
// when extraKey is set, that key. Values never appear in its errors. The
// file may be UTF-8, with or without a byte order mark, or UTF-16 with
// one: what Windows PowerShell 5.1 writes (Set-Content -Encoding UTF8
// adds a BOM; Out-File and > write UTF-16LE), so that an operator's file
// made on the node reads as it looks.
func readCredentials(path, extraKey string) (credentials, error) {
	f, err := os.Open(path)
	if err != nil {
		return credentials{}, err
	}
	defer f.Close()
	raw, err := io.ReadAll(io.LimitReader(f, maxCredentialsFile+1))
	if err != nil {
		return credentials{}, err
	}
	if len(raw) > maxCredentialsFile {
		return credentials{}, fmt.Errorf("%s: longer than %d bytes; want a few key=value lines", path, maxCredentialsFile)
	}
	text, err := decodeText(raw)
	if err != nil {
		return credentials{}, fmt.Errorf("%s: %w", path, err)
	}
	var c credentials
	var pw string
	seen := map[string]bool{}
	sc := bufio.NewScanner(strings.NewReader(text))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimRight(sc.Text(), "\r")
		if strings.TrimSpace(line) == "" || strings.HasPrefix(strings.TrimSpace(line), "#") {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		k = strings.TrimSpace(k)
		switch {
		case !ok:
			return credentials{}, fmt.Errorf("%s:%d: want key=value", path, n)
		case seen[k]:
			return credentials{}, fmt.Errorf("%s:%d: %s given twice", path, n, k)
		}
		seen[k] = true
		switch {
		case k == "username":
			c.user = v
		case k == "password":
			pw = v
		case extraKey != "" && k == extraKey:
			c.extra = v
		default:
			want := "username, password"
			if extraKey != "" {
				want += ", " + extraKey
			}
			return credentials{}, fmt.Errorf("%s:%d: unknown key %q (want %s)", path, n, k, want)
		}
	}
	if err := sc.Err(); err != nil {
		return credentials{}, err
	}
	if c.user == "" || pw == "" {
		return credentials{}, fmt.Errorf("%s: username and password are both required", path)
	}
	c.password = host.NewSecret(pw)
	return c, nil
}

// stepWriter prints the steps as they end, one line each, then a summary.
type stepWriter struct {
	w       io.Writer
	started bool
	err     error
}

const stepFormat = "%-9s %-58s %-4s %9s %6s  %s\n"

func (s *stepWriter) print(format string, a ...any) {
	if _, err := fmt.Fprintf(s.w, format, a...); err != nil && s.err == nil {
		s.err = err
	}
}

func (s *stepWriter) step(st selftest.Step) {
	if !s.started {
		s.started = true
		s.print(stepFormat, "BACKEND", "STEP", "RESULT", "TIME", "TRIPS", "DETAIL")
	}
	s.print(stepFormat, st.Backend, oneLine(st.Name), strings.ToUpper(st.Result),
		(time.Duration(st.DurationMs * float64(time.Millisecond))).Round(time.Millisecond).String(), fmt.Sprint(st.RoundTrips), oneLine(st.Detail))
}

func (s *stepWriter) summary(rep *selftest.Report, recorded string) error {
	for _, l := range rep.Leftovers {
		s.print("removed first, left by an earlier run: %s\n", oneLine(l))
	}
	for _, l := range rep.NotRemoved {
		s.print("NOT REMOVED: %s\n", oneLine(l))
	}
	counts := map[string]int{}
	for _, st := range rep.Steps {
		counts[st.Result]++
	}
	verdict := "PASSED"
	if !rep.Passed() {
		verdict = "FAILED"
	}
	if rep.Interrupted {
		verdict += " (interrupted)"
	}
	s.print("\nrun %s on %s (build %d.%d): %d pass, %d fail, %d skip: %s\n", rep.Run, rep.Windows.Caption, rep.Windows.Build,
		rep.Windows.UBR, counts[selftest.Pass], counts[selftest.Fail], counts[selftest.Skip], verdict)
	if recorded != "" {
		s.print("recorded every host call to %s (docs/selftest.md says how to contribute it)\n", recorded)
	}
	return s.err
}

// decodeText returns a text file's contents as a string: UTF-8 (a byte
// order mark dropped), or UTF-16 little or big endian after its byte order
// mark.
func decodeText(b []byte) (string, error) {
	var order binary.ByteOrder
	switch {
	case bytes.HasPrefix(b, []byte{0xEF, 0xBB, 0xBF}):
		b = b[3:]
	case bytes.HasPrefix(b, []byte{0xFF, 0xFE}):
		order = binary.LittleEndian
	case bytes.HasPrefix(b, []byte{0xFE, 0xFF}):
		order = binary.BigEndian
	}
	if order == nil {
		if !utf8.Valid(b) {
			return "", errors.New("not UTF-8 (or UTF-16 with a byte order mark)")
		}
		return string(b), nil
	}
	b = b[2:]
	if len(b)%2 != 0 {
		return "", errors.New("UTF-16 of an odd number of bytes")
	}
	u := make([]uint16, len(b)/2)
	for i := range u {
		u[i] = order.Uint16(b[2*i:])
	}
	return string(utf16.Decode(u)), nil
}
