package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/wincsi/csi-windows-node/pkg/node"
)

// The physical floor of an RPC on this machine: a bare grpc-go server that
// answers NodeGetCapabilities and nothing else, with grpc-go's defaults (no
// interceptors, logging, metrics or validation), in a process of its own on
// a unix socket, called over one connection exactly as the plugin is. The
// bench starts its own binary with -serve-floor to run it.

// bareNode answers NodeGetCapabilities with a response computed once.
type bareNode struct {
	csi.UnimplementedNodeServer
	resp *csi.NodeGetCapabilitiesResponse
}

func (b bareNode) NodeGetCapabilities(context.Context, *csi.NodeGetCapabilitiesRequest) (*csi.NodeGetCapabilitiesResponse, error) {
	return b.resp, nil
}

// serveFloor serves the bare server on socket until SIGTERM or SIGINT.
func serveFloor(socket string) error {
	// The same answer as the plugin's, so both calls carry the same bytes.
	resp := node.Capabilities()
	lis, err := net.Listen("unix", socket)
	if err != nil {
		return err
	}
	srv := grpc.NewServer()
	csi.RegisterNodeServer(srv, bareNode{resp: resp})
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	go func() {
		<-sig
		srv.Stop()
	}()
	return srv.Serve(lis)
}

// bareFloor is a running bare server and a client of it.
type bareFloor struct {
	node csi.NodeClient
	stop func()
}

// startBareFloor starts the bare server (this binary with -serve-floor)
// with its socket in dir and connects to it.
func startBareFloor(ctx context.Context, dir string) (*bareFloor, error) {
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, err
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	socket := filepath.Join(dir, "floor.sock")
	cmd := exec.CommandContext(ctx, exe, "-serve-floor="+socket)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start the bare floor server: %w", err)
	}
	done := make(chan struct{})
	var waitErr error
	go func() { waitErr = cmd.Wait(); close(done) }()
	kill := func() {
		_ = cmd.Process.Signal(syscall.SIGTERM) // it may have exited already
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill() // it ignored SIGTERM
			<-done
		}
	}
	for {
		conn, err := net.DialTimeout("unix", socket, time.Second)
		if err == nil {
			_ = conn.Close() // only the connect mattered
			break
		}
		select {
		case <-done:
			return nil, fmt.Errorf("the bare floor server exited: %w", waitErr)
		case <-time.After(time.Millisecond):
		}
	}
	conn, err := grpc.NewClient("unix://"+socket, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		kill()
		return nil, err
	}
	return &bareFloor{node: csi.NewNodeClient(conn), stop: func() {
		_ = conn.Close() // the server goes away next
		kill()
	}}, nil
}

// call is one NodeGetCapabilities on the bare server.
func (b *bareFloor) call(ctx context.Context, _ int) error {
	ctx, cancel := context.WithTimeout(ctx, rpcTimeout)
	defer cancel()
	resp, err := b.node.NodeGetCapabilities(ctx, &csi.NodeGetCapabilitiesRequest{}, grpc.WaitForReady(true))
	if err == nil && len(resp.GetCapabilities()) == 0 {
		err = errors.New("bare floor server: no capabilities")
	}
	return err
}

// floorRounds is how many alternating chunks the plugin's and the bare
// server's floor calls are made in, so that both meet the same load.
const floorRounds = 10

// floors times n NodeGetCapabilities calls of the plugin and n of the bare
// server (after 100 warm-up calls each), one call at a time, alternating
// in floorRounds chunks.
func floors(ctx context.Context, n int, p *plugin, bare *bareFloor) (plugin, bareSamples []time.Duration, err error) {
	pcall := func(ctx context.Context, _ int) error { return capabilities(ctx, p) }
	for _, f := range []func(context.Context, int) error{pcall, bare.call} {
		if _, _, err := run(ctx, 100, 1, f); err != nil {
			return nil, nil, fmt.Errorf("warm-up: %w", err)
		}
	}
	chunk := max(n/floorRounds, 1)
	for len(plugin) < n {
		k := min(chunk, n-len(plugin))
		ps, _, err := run(ctx, k, 1, pcall)
		if err != nil {
			return nil, nil, err
		}
		bs, _, err := run(ctx, k, 1, bare.call)
		if err != nil {
			return nil, nil, fmt.Errorf("bare floor: %w", err)
		}
		plugin, bareSamples = append(plugin, ps...), append(bareSamples, bs...)
	}
	return plugin, bareSamples, nil
}
