package server

import (
	"errors"

	"golang.org/x/sys/windows"
)

// addrInUse reports whether a listen failed because the address is taken:
// Winsock's WSAEADDRINUSE
// (https://learn.microsoft.com/windows/win32/winsock/windows-sockets-error-codes-2).
func addrInUse(err error) bool { return errors.Is(err, windows.WSAEADDRINUSE) }
