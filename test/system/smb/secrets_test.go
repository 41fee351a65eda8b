//go:build linux

// Linux only: these tests run the backend on the simulated host, which
// runs only on Linux (POSIX paths; pkg/sim doc.go).

package smb_test

import (
	"bytes"
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"k8s.io/klog/v2"
	"k8s.io/klog/v2/textlogger"
)

// syncBuffer is a bytes.Buffer safe for the concurrent writes of the node,
// the backend and the sim's persister.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// The whole lifecycle, failures included, logged at -v=10: no password
// appears in the log, in any returned error or in any file the plugin or
// the sim writes.
func TestSecretsNeverLeak(t *testing.T) {
	var buf syncBuffer
	logger := textlogger.NewLogger(textlogger.NewConfig(textlogger.Verbosity(10), textlogger.Output(&buf)))
	ctx := klog.NewContext(context.Background(), logger)
	e := newEnvCtx(t, ctx, logger)

	var errs []error
	try := func(what string, err error) {
		t.Helper()
		if err != nil {
			errs = append(errs, err)
			t.Logf("%s: %v", what, err)
		}
	}
	try("wrong password", e.stage(vol{id: "v1", secrets: secret("alice", bobPW)}))
	try("stage v1", e.stage(vol{id: "v1"}))
	try("publish v1", e.publish("v1"))
	try("1219", e.stage(vol{id: "v3", source: "//srv/other", secrets: secret("bob", bobPW)}))
	try("other user kept", e.stage(vol{id: "v2", secrets: secret("bob", bobPW)}))
	if err := e.sim.SetSharePassword("srv", "data", "alice", alicePW2); err != nil {
		t.Fatal(err)
	}
	_, herr := e.health("v1")
	try("health after rotation", herr)
	try("old password after rotation", e.stage(vol{id: "v3", secrets: secret("alice", alicePW)}))
	try("new password", e.stage(vol{id: "v3", secrets: secret("alice", alicePW2)}))
	try("domain user conflicts", e.stage(vol{id: "v4", subDir: "pvc", secrets: secret(`CORP\alice`, corpPW)}))
	try("privacy refused", e.stage(vol{id: "v5", source: "//srv/plain", subDir: "v1"}))
	try("bad secret form", e.stage(vol{id: "v6", secrets: map[string]string{"username": "a\\b\\c", "password": alicePW}}))
	try("password without user", e.stage(vol{id: "v6", secrets: map[string]string{"password": alicePW}}))
	e.restart()
	try("unpublish v1", e.unpublish("v1"))
	for _, id := range []string{"v1", "v2", "v3", "v4", "v5", "v6"} {
		try("unstage "+id, e.unstage(id))
	}
	e.wantMappings(nil)
	if len(errs) < 6 { // wrong password, 1219, old password, privacy, two contract errors
		t.Fatalf("only %d failures exercised; the test lost its failure cases", len(errs))
	}

	log := buf.String()
	if !strings.Contains(log, "Mapped share") {
		t.Fatal("the captured log misses the backend's lines; the logger is not wired")
	}
	for _, pw := range allPasswords {
		if strings.Contains(log, pw) {
			t.Errorf("password %q appears in the log", pw)
		}
		for _, err := range errs {
			if strings.Contains(err.Error(), pw) {
				t.Errorf("password %q appears in error %v", pw, err)
			}
		}
	}
	// Every file the plugin (journal, notes) and the sim (state) wrote,
	// except the share contents.
	for _, dir := range []string{e.jdir, e.simDir} {
		err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			if strings.Contains(p, string(filepath.Separator)+"smb"+string(filepath.Separator)) {
				return nil
			}
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			for _, pw := range allPasswords {
				if bytes.Contains(b, []byte(pw)) {
					t.Errorf("password %q stored in %s", pw, p)
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}
