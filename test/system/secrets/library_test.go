package secrets

import (
	"bytes"
	"flag"
	"testing"

	"k8s.io/klog/v2"

	"github.com/wincsi/csi-windows-node/test/harness/leakcheck"
	"github.com/wincsi/csi-windows-node/test/harness/simnode"
	"github.com/wincsi/csi-windows-node/test/harness/testbin"
)

// TestLibraryModeAtV10: the node service in the test process, klog at
// -v=10 into a buffer; no secret in the log, the errors, the health
// messages or any file the plugin and the simulated host wrote.
func TestLibraryModeAtV10(t *testing.T) {
	var buf testbin.SyncBuffer
	fs := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(fs)
	for k, v := range map[string]string{"v": "10", "logtostderr": "false", "alsologtostderr": "false", "stderrthreshold": "FATAL"} {
		if err := fs.Set(k, v); err != nil {
			t.Fatal(err)
		}
	}
	klog.SetOutput(&buf)
	t.Cleanup(func() {
		klog.Flush()
		_ = fs.Set("v", "0") // restoring the default cannot fail
	})

	base := t.TempDir()
	n, err := simnode.Open(simnode.Options{Base: base})
	if err != nil {
		t.Fatal(err)
	}
	if err := leakcheck.SetupHost(n.Sim); err != nil {
		t.Fatal(err)
	}
	files := 0
	msgs := leakcheck.RunSteps(t, n.Server, n.Kubelet, func(string) { files += leakcheck.CheckFiles(t, base) })
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	klog.Flush()
	log := buf.String()
	if len(log) == 0 || !bytes.Contains([]byte(log), []byte("Mapped share")) {
		t.Fatalf("the klog buffer did not capture the plugin's -v=10 log (%d bytes): the check below would prove nothing", len(log))
	}
	leakcheck.CheckNoLeak(t, "klog output at -v=10", log)
	for _, m := range msgs {
		leakcheck.CheckNoLeak(t, "message", m)
	}
	files += leakcheck.CheckFiles(t, base)
	t.Logf("library mode: %d steps, %d bytes of -v=10 log, %d messages, %d file reads checked", len(leakcheck.Steps), len(log), len(msgs), files)
}
