// Package noprocess fails when product code (every non-test Go file of the
// module outside test/ and testdata/ directories) could start a process:
// PowerShell, cmd.exe, a shell, or anything else. The plugin does its host
// work through WMI and Win32 calls only. The scan parses each file
// (go/parser) and flags imports of os/exec (and process libraries),
// references to process-creation functions of any package (StartProcess,
// ForkExec, Exec, CreateProcess*, ShellExecute*, WinExec) and string
// literals naming a shell or a launcher; TestScanFindsPlantedViolations
// proves that it finds violations planted in a copy of the module.
package noprocess
