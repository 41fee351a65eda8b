package server

import (
	"context"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// slowNode is a node service whose NodeStageVolume runs until its context
// ends, then takes until undone is closed to undo its work, as a cancelled
// stage rolls back.
type slowNode struct {
	csi.UnimplementedNodeServer
	started chan struct{}
	undone  chan struct{}
	ended   chan struct{}
}

func (n *slowNode) NodeStageVolume(ctx context.Context, _ *csi.NodeStageVolumeRequest) (*csi.NodeStageVolumeResponse, error) {
	close(n.started)
	<-ctx.Done()
	<-n.undone
	close(n.ended)
	return nil, ctx.Err()
}

// TestStopNamesAndWaitsForCancelledRPCs: Running names the RPCs in flight;
// Stop cancels those still running when the grace is over, returns them,
// and waits for their handlers to finish undoing their work.
func TestStopNamesAndWaitsForCancelledRPCs(t *testing.T) {
	n := &slowNode{started: make(chan struct{}), undone: make(chan struct{}), ended: make(chan struct{})}
	s := New(Config{Identity: &csi.UnimplementedIdentityServer{}, Node: n})
	l, err := net.Listen("unix", filepath.Join(t.TempDir(), "csi.sock"))
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = s.Serve(l) }() // ends with Stop
	conn, err := grpc.NewClient("unix://"+l.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	go func() {
		_, _ = csi.NewNodeClient(conn).NodeStageVolume(context.Background(), &csi.NodeStageVolumeRequest{VolumeId: "vol-1"})
	}()
	<-n.started
	running := s.Running()
	if len(running) != 1 || running[0].Method != "NodeStageVolume" || running[0].VolumeID != "vol-1" ||
		!strings.HasPrefix(running[0].String(), "NodeStageVolume vol-1 (") {
		t.Fatalf("Running = %+v", running)
	}
	stopped := make(chan []RPC, 1)
	go func() { stopped <- s.Stop(time.Millisecond, time.Hour) }()
	select {
	case <-stopped:
		t.Fatal("Stop returned while the cancelled handler was still undoing its work")
	case <-time.After(20 * time.Millisecond):
	}
	close(n.undone)
	cancelled := <-stopped
	<-n.ended
	if len(cancelled) != 1 || cancelled[0].VolumeID != "vol-1" {
		t.Errorf("Stop returned %+v, want the cancelled stage of vol-1", cancelled)
	}
	if left := s.Running(); len(left) != 0 {
		t.Errorf("running after Stop: %+v", left)
	}
}
