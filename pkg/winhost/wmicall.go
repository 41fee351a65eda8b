package winhost

import (
	"context"
	"fmt"

	"github.com/wincsi/csi-windows-node/pkg/host"
	"github.com/wincsi/csi-windows-node/pkg/winhost/wql"
)

// storage runs Storage Management API requests (namespace
// Root\Microsoft\Windows\Storage) through the executor and gives their
// failures host meanings.
type storage struct{ e Executor }

// query runs SELECT props FROM class WHERE conds, built by pkg/winhost/wql.
func (s storage) query(ctx context.Context, class string, props []string, conds ...wql.Cond) ([]Instance, error) {
	q, err := wql.Select(class, props, conds...)
	if err != nil {
		return nil, fmt.Errorf("build query on %s: %w: %w", class, err, host.ErrInvalid)
	}
	insts, err := s.e.Query(ctx, NamespaceStorage, q)
	if err != nil {
		return nil, mapHostErr(err)
	}
	return insts, nil
}

// associators follows assoc from the object at path to objects of class result.
func (s storage) associators(ctx context.Context, path, assoc, result string) ([]Instance, error) {
	insts, err := s.e.Associators(ctx, NamespaceStorage, path, assoc, result)
	if err != nil {
		return nil, mapHostErr(err)
	}
	return insts, nil
}

// call invokes a method. A non-zero return value is an error built from the
// table of the class's provider (methodError); the result is returned with
// it, so that a caller can look at output parameters of a partial success.
// A failed call is mapped by mapErr.
func (s storage) call(ctx context.Context, m Method) (Result, error) {
	r, err := s.e.Call(ctx, NamespaceStorage, m)
	if err != nil {
		return Result{}, mapErr(m.Class, err)
	}
	if r.ReturnValue != 0 {
		return r, methodError(m.Class, m.Name, r.ReturnValue)
	}
	return r, nil
}
