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

// measureBareFloor starts the bare server, warms it up and times c.Floor
// NodeGetCapabilities calls one after another.
func measureBareFloor(ctx context.Context, c *config, dir string) (dist, error) {
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return dist{}, err
	}
	exe, err := os.Executable()
	if err != nil {
		return dist{}, err
	}
	socket := filepath.Join(dir, "floor.sock")
	cmd := exec.CommandContext(ctx, exe, "-serve-floor="+socket)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		return dist{}, fmt.Errorf("start the bare floor server: %w", err)
	}
	done := make(chan struct{})
	var waitErr error
	go func() { waitErr = cmd.Wait(); close(done) }()
	defer func() {
		_ = cmd.Process.Signal(syscall.SIGTERM) // it may have exited already
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill() // it ignored SIGTERM
			<-done
		}
	}()
	for {
		conn, err := net.DialTimeout("unix", socket, time.Second)
		if err == nil {
			_ = conn.Close() // only the connect mattered
			break
		}
		select {
		case <-done:
			return dist{}, fmt.Errorf("the bare floor server exited: %w", waitErr)
		case <-time.After(time.Millisecond):
		}
	}
	conn, err := grpc.NewClient("unix://"+socket, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return dist{}, err
	}
	defer conn.Close()
	client := csi.NewNodeClient(conn)
	call := func(ctx context.Context, _ int) error {
		ctx, cancel := context.WithTimeout(ctx, rpcTimeout)
		defer cancel()
		resp, err := client.NodeGetCapabilities(ctx, &csi.NodeGetCapabilitiesRequest{}, grpc.WaitForReady(true))
		if err == nil && len(resp.GetCapabilities()) == 0 {
			err = errors.New("bare floor server: no capabilities")
		}
		return err
	}
	if _, _, err := run(ctx, 100, 1, call); err != nil {
		return dist{}, fmt.Errorf("warm-up: %w", err)
	}
	samples, _, err := run(ctx, c.Floor, 1, call)
	if err != nil {
		return dist{}, err
	}
	return summarise(samples), nil
}
