package testbin

import "os"

// Windows has no SIGTERM for child processes; Kill is the only signal.
var terminate = os.Kill
