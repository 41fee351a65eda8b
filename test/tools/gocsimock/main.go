// Command gocsimock serves the controller and identity services of
// dell/gocsi's mock plugin (github.com/dell/gocsi/mock/service) on a unix
// socket, without gocsi's middleware: a vendor's controller that knows
// nothing of the simulated host, for csi-sanity runs against the plugin
// (test/binary/foreign). It stops on SIGTERM or SIGINT.
//
// Usage: gocsimock <socket path>
package main

import (
	"fmt"
	"net"
	"os"
	"os/signal"
	"syscall"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/dell/gocsi/mock/service"
	"google.golang.org/grpc"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: gocsimock <socket path>")
		os.Exit(2)
	}
	l, err := net.Listen("unix", os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, "gocsimock:", err)
		os.Exit(1)
	}
	mock := service.NewServer()
	srv := grpc.NewServer()
	csi.RegisterIdentityServer(srv, mock)
	csi.RegisterControllerServer(srv, mock)
	go func() {
		sig := make(chan os.Signal, 1)
		signal.Notify(sig, syscall.SIGTERM, os.Interrupt)
		<-sig
		srv.GracefulStop()
	}()
	if err := srv.Serve(l); err != nil {
		fmt.Fprintln(os.Stderr, "gocsimock:", err)
		os.Exit(1)
	}
}
