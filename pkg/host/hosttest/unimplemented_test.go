package hosttest

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/wincsi/csi-windows-node/pkg/host"
)

// TestUnimplementedFailsEveryMethod calls every method of every area with
// zero arguments and expects host.ErrNotImplemented naming the method.
func TestUnimplementedFailsEveryMethod(t *testing.T) {
	h := reflect.ValueOf(Unimplemented())
	n := 0
	for i := range h.NumField() {
		area := strings.ToLower(h.Type().Field(i).Name)
		iface := h.Field(i)
		for j := range iface.NumMethod() {
			name := area + "." + iface.Type().Method(j).Name
			fn := iface.Method(j)
			args := []reflect.Value{reflect.ValueOf(context.Background())}
			for k := 1; k < fn.Type().NumIn(); k++ {
				args = append(args, reflect.Zero(fn.Type().In(k)))
			}
			out := fn.Call(args)
			err, _ := out[len(out)-1].Interface().(error)
			if !errors.Is(err, host.ErrNotImplemented) || !strings.HasPrefix(err.Error(), name+":") {
				t.Errorf("%s: error %v, want ErrNotImplemented naming %s", name, err, name)
			}
			n++
		}
	}
	if n < 39 {
		t.Errorf("only %d methods reached; the host interfaces have at least 39", n)
	}
}
