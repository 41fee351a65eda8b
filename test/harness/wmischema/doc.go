// Package wmischema checks WMI calls of the Windows host against the
// classes Microsoft's MOF defines, as github.com/microsoft/wmi v0.43.0
// ships them: Go code generated from the MOF of Windows Server 2019
// (server2019/) and 23H2 (server23h2/), one file per class under
// root/microsoft/windows/<namespace>/, carrying every property (struct
// fields, with the base class embedded) and every method with each
// parameter's name, CIM type (the <param name=... type=...> comments) and
// direction (/* IN */, /* OUT */ in the signature).
//
// It is test tooling: the winhost tests record every call the scripted
// executor sees and check each against both trees (a class exists in the
// namespace the call uses, the method exists, every input is an IN
// parameter whose Go value fits the CIM type by the executor's conventions,
// every output in a reply is an OUT parameter, every property in a query or
// a reply exists). The module is read from the module cache at test time
// (go list -m), never copied into this repository.
//
// What does not belong here: executing anything, knowledge of which calls
// winhost makes (that comes from the recording), Windows behaviour.
package wmischema
