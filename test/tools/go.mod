module github.com/wincsi/csi-windows-node/test/tools

go 1.26.0

tool github.com/dell/gocsi/csc

require (
	github.com/container-storage-interface/spec v1.6.0
	github.com/dell/gocsi v1.15.0
	google.golang.org/grpc v1.75.0
)

require (
	github.com/golang/protobuf v1.5.4 // indirect
	github.com/inconshreveable/mousetrap v1.1.0 // indirect
	github.com/sirupsen/logrus v1.9.3 // indirect
	github.com/spf13/cobra v1.10.1 // indirect
	github.com/spf13/pflag v1.0.9 // indirect
	golang.org/x/net v0.43.0 // indirect
	golang.org/x/sys v0.35.0 // indirect
	golang.org/x/text v0.28.0 // indirect
	google.golang.org/genproto/googleapis/rpc v0.0.0-20250707201910-8d1bb00bc6a7 // indirect
	google.golang.org/protobuf v1.36.6 // indirect
)
