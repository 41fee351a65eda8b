package deploy

import (
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"regexp"
	"sort"
	"strings"
	"testing"
)

const (
	baseImage     = "mcr.microsoft.com/oss/kubernetes/windows-host-process-containers-base-image:v1.0.0"
	versionPkg    = "github.com/wincsi/csi-windows-node/pkg/version"
	versionSource = repoRoot + "/pkg/version/version.go"
)

// instruction is one Dockerfile instruction, continuation lines joined.
type instruction struct {
	line int
	cmd  string // upper case: FROM, RUN, ...
	args string
}

// stage is the instructions from one FROM to the next.
type stage struct {
	from instruction
	ins  []instruction
}

// parseDockerfile splits a Dockerfile into stages. It knows comments,
// blank lines and backslash continuations, which is all Dockerfile.windows
// uses; a parser directive (# syntax=) is a comment here.
func parseDockerfile(t *testing.T, path string) []stage {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var stages []stage
	var cur strings.Builder
	start := 0
	flush := func() {
		text := strings.TrimSpace(cur.String())
		cur.Reset()
		if text == "" {
			return
		}
		cmd, args, _ := strings.Cut(text, " ")
		in := instruction{line: start, cmd: strings.ToUpper(cmd), args: strings.TrimSpace(args)}
		if in.cmd == "FROM" {
			stages = append(stages, stage{from: in})
			return
		}
		if len(stages) == 0 {
			if in.cmd != "ARG" {
				t.Fatalf("%s:%d: %s before the first FROM", path, in.line, in.cmd)
			}
			return
		}
		stages[len(stages)-1].ins = append(stages[len(stages)-1].ins, in)
	}
	for i, l := range strings.Split(string(b), "\n") {
		trimmed := strings.TrimSpace(l)
		if strings.HasPrefix(trimmed, "#") || (trimmed == "" && cur.Len() == 0) {
			continue
		}
		if cur.Len() == 0 {
			start = i + 1
		}
		if body, ok := strings.CutSuffix(trimmed, `\`); ok {
			cur.WriteString(body + " ")
			continue
		}
		cur.WriteString(trimmed)
		flush()
	}
	flush()
	return stages
}

var ldflagX = regexp.MustCompile(`-X\s+(\S+?)=`)

// TestDockerfile checks Dockerfile.windows against the rest of the tree:
// a Linux build stage cross-compiling for windows/amd64 with the Makefile's
// -ldflags keys (which must name variables of pkg/version), a final stage on
// Microsoft's HostProcess base image with no RUN, and the binary copied to
// the path the DaemonSet's command runs.
func TestDockerfile(t *testing.T) {
	stages := parseDockerfile(t, dockerfile)
	if len(stages) != 2 {
		t.Fatalf("want 2 stages (build, image), got %d", len(stages))
	}
	build, final := stages[0], stages[1]

	// Build stage: native Go image, cross-compiled.
	if f := strings.Fields(build.from.args); len(f) != 4 || f[0] != "--platform=$BUILDPLATFORM" ||
		!strings.HasPrefix(f[1], "golang:") || !strings.EqualFold(f[2], "AS") {
		t.Errorf("build stage: FROM %s, want FROM --platform=$BUILDPLATFORM golang:<version> AS <name>", build.from.args)
	}
	stageName := strings.Fields(build.from.args)[len(strings.Fields(build.from.args))-1]
	var goBuild string
	for _, in := range build.ins {
		if in.cmd == "RUN" && strings.Contains(in.args, "go build") {
			goBuild = in.args
		}
	}
	for _, want := range []string{"GOOS=windows", "GOARCH=amd64", "CGO_ENABLED=0", "-trimpath", "-o /out/csi-windows-node.exe", "./cmd/csi-windows-node"} {
		if !strings.Contains(goBuild, want) {
			t.Errorf("build stage: the go build RUN lacks %q", want)
		}
	}
	dockerKeys := ldflagKeys(goBuild)
	makeKeys := ldflagKeys(makefileVar(t, "LDFLAGS"))
	if strings.Join(dockerKeys, " ") != strings.Join(makeKeys, " ") {
		t.Errorf("-ldflags -X keys: Dockerfile.windows %v, Makefile LDFLAGS %v", dockerKeys, makeKeys)
	}
	vars := versionVars(t)
	for _, k := range dockerKeys {
		name, ok := strings.CutPrefix(k, versionPkg+".")
		if !ok || !vars[name] {
			t.Errorf("-X %s: not a string variable of %s", k, versionPkg)
		}
	}
	if len(dockerKeys) == 0 {
		t.Error("build stage: no -X version flags")
	}

	// Final stage: the HostProcess base image, files only.
	if final.from.args != baseImage {
		t.Errorf("final stage: FROM %s, want %s", final.from.args, baseImage)
	}
	var dest, entrypoint, user string
	labels := map[string]bool{}
	for _, in := range final.ins {
		switch in.cmd {
		case "RUN":
			t.Errorf("line %d: RUN in the final stage; a windows/amd64 stage cannot run on the Linux build machine", in.line)
		case "COPY":
			f := strings.Fields(in.args)
			if len(f) == 3 && f[0] == "--from="+stageName && f[1] == "/out/csi-windows-node.exe" {
				dest = f[2]
			}
		case "ENTRYPOINT":
			var argv []string
			if err := json.Unmarshal([]byte(in.args), &argv); err != nil || len(argv) != 1 {
				t.Errorf("line %d: ENTRYPOINT %s: want the exec form with one element", in.line, in.args)
			} else {
				entrypoint = argv[0]
			}
		case "USER":
			user = in.args
		case "LABEL":
			for _, m := range regexp.MustCompile(`(org\.opencontainers\.image\.[a-z]+)=`).FindAllStringSubmatch(in.args, -1) {
				labels[m[1]] = true
			}
		}
		if strings.Contains(strings.ToLower(in.args), "powershell") {
			t.Errorf("line %d: the image must not need PowerShell", in.line)
		}
	}
	if user != "ContainerAdministrator" {
		t.Errorf("final stage: USER %q, want ContainerAdministrator", user)
	}
	for _, l := range []string{"title", "source", "version", "revision", "created", "licenses"} {
		if !labels["org.opencontainers.image."+l] {
			t.Errorf("final stage: no label org.opencontainers.image.%s", l)
		}
	}

	// The binary is where the DaemonSet runs it from.
	ds := nodeDaemonSet(t, rendering{name: "kustomize base", objs: decodeAll(t, "base", renderKustomize(t, baseDir))})
	command := ds.Spec.Template.Spec.Containers[0].Command
	rel, ok := strings.CutPrefix(strings.Join(command, " "), sandboxMountPoint)
	if !ok {
		t.Fatalf("DaemonSet command %q does not start with %s", command, sandboxMountPoint)
	}
	if got := strings.ReplaceAll(strings.TrimPrefix(dest, "/"), "/", `\`); got != rel {
		t.Errorf("the image has the binary at %q (COPY --from=%s /out/csi-windows-node.exe %s); the DaemonSet runs %q below the sandbox mount point", got, stageName, dest, rel)
	}
	if entrypoint != sandboxMountPoint+rel {
		t.Errorf("ENTRYPOINT %q, want %q like the DaemonSet", entrypoint, sandboxMountPoint+rel)
	}
}

// TestMakefileImageTarget checks that `make image` builds Dockerfile.windows
// for windows/amd64 with the build arguments the Dockerfile declares.
func TestMakefileImageTarget(t *testing.T) {
	recipe := makefileRecipe(t, "image")
	for _, want := range []string{"docker buildx build", "--platform windows/amd64", "-f Dockerfile.windows", "--push"} {
		if !strings.Contains(recipe, want) {
			t.Errorf("make image: recipe lacks %q:\n%s", want, recipe)
		}
	}
	args := map[string]bool{}
	for _, st := range parseDockerfile(t, dockerfile) {
		for _, in := range st.ins {
			if in.cmd == "ARG" {
				name, _, _ := strings.Cut(in.args, "=")
				args[name] = true
			}
		}
	}
	for name := range args {
		if !strings.Contains(recipe, "--build-arg "+name+"=") {
			t.Errorf("make image: Dockerfile.windows ARG %s is not passed", name)
		}
	}
}

func ldflagKeys(s string) []string {
	var keys []string
	for _, m := range ldflagX.FindAllStringSubmatch(s, -1) {
		keys = append(keys, strings.ReplaceAll(m[1], "$(PKG)", "github.com/wincsi/csi-windows-node"))
	}
	sort.Strings(keys)
	return keys
}

// versionVars returns the package-level string variables of pkg/version,
// the only ones -X can set.
func versionVars(t *testing.T) map[string]bool {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), versionSource, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.VAR {
			continue
		}
		for _, s := range g.Specs {
			vs := s.(*ast.ValueSpec)
			for i, n := range vs.Names {
				isString := false
				if id, ok := vs.Type.(*ast.Ident); ok && id.Name == "string" {
					isString = true
				}
				if i < len(vs.Values) {
					if lit, ok := vs.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
						isString = true
					}
				}
				if isString {
					out[n.Name] = true
				}
			}
		}
	}
	return out
}

// makefileVar returns the value of a `NAME := value` line of the Makefile.
func makefileVar(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(makefile)
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(name) + `\s*[:?]?=\s*(.*)$`)
	m := re.FindStringSubmatch(string(b))
	if m == nil {
		t.Fatalf("Makefile: no %s", name)
	}
	return m[1]
}

// makefileRecipe returns a target's recipe, continuation lines joined.
func makefileRecipe(t *testing.T, target string) string {
	t.Helper()
	b, err := os.ReadFile(makefile)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(b), "\n")
	for i, l := range lines {
		if !strings.HasPrefix(l, target+":") {
			continue
		}
		var recipe []string
		for _, r := range lines[i+1:] {
			if !strings.HasPrefix(r, "\t") {
				break
			}
			recipe = append(recipe, strings.TrimSuffix(strings.TrimSpace(r), `\`))
		}
		return strings.Join(recipe, " ")
	}
	t.Fatalf("Makefile: no target %s", target)
	return ""
}
