package wmiexec

import (
	"bytes"
	"strings"
	"testing"

	"k8s.io/klog/v2/textlogger"

	"github.com/wincsi/csi-windows-node/pkg/winhost"
)

// TestLoggedParamsHideHostileSecrets: the executor's per-call log line
// (logCall's "params", written at -v=5) never prints a sensitive value,
// whatever it contains: quotes, backslashes, colons, format verbs, the
// credential form "user:password" (test/system/secrets drives the same values
// through the whole plugin).
func TestLoggedParamsHideHostileSecrets(t *testing.T) {
	secrets := []string{`QmSMBpw"'\:%v%s{}`, `QmCHAP"\:%v12`, `QmMUTU'\:%s34`, `CORP\\al\:ice:QmDISC"\:%d56`, "%!v(MISSING)Qm\x00x"}
	for _, s := range secrets {
		var buf bytes.Buffer
		logger := textlogger.NewLogger(textlogger.NewConfig(textlogger.Verbosity(10), textlogger.Output(&buf)))
		in := []winhost.Param{
			{Name: "RemotePath", Value: `\\srv\data`},
			{Name: "Credential", Value: s, Sensitive: true},
			{Name: "ChapSecret", Value: s, Sensitive: true},
		}
		logger.V(5).Info("Host call", "method", "wmi MSFT_SmbGlobalMapping.Create", "params", loggedParams(in))
		out := buf.String()
		if !strings.Contains(out, "Credential=[sensitive]") || !strings.Contains(out, `RemotePath=`) {
			t.Fatalf("log line lacks the parameters: %q", out)
		}
		for _, part := range []string{s, strings.TrimPrefix(s, `CORP\\al\:ice:`), "Qm"} {
			if strings.Contains(out, part) {
				t.Errorf("log line %q shows (part of) secret %q", out, s)
			}
		}
	}
}
