package selftest

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/wincsi/csi-windows-node/pkg/host"
)

// smb runs the SMB backend's steps against the operator's share, or a
// share and user selftest makes on the node (mapped through the node's
// own name, as a loopback connection).
func (r *runner) smb(ctx context.Context) {
	mark := len(r.undo)
	defer r.unwindTo(ctx, mark)
	src, user, pw := r.cfg.SMB.Source, r.cfg.SMB.User, r.cfg.SMB.Password
	if r.cfg.SMB.Local {
		local, shareName := r.name(""), r.name("")
		shareDir := r.work.Join(Prefix+r.cfg.Run, "share")
		smb := r.n.Admin.LocalSMB
		r.step(ctx, "create local user", func(ctx context.Context) (string, error) {
			if err := smb.CreateUser(ctx, local, r.cfg.LocalPassword); err != nil {
				r.unknownOutcome(err, "local user "+local)
				return "", err
			}
			r.push("user "+local, "local user "+local, func(ctx context.Context) error { return smb.DeleteUser(ctx, local) })
			return local + ", with a random password", nil
		})
		r.step(ctx, "create local share", func(ctx context.Context) (string, error) {
			if err := r.n.Host.Files.MakeDir(ctx, shareDir); err != nil {
				return "", err
			}
			if err := smb.CreateShare(ctx, shareName, shareDir, local); err != nil {
				r.unknownOutcome(err, "share "+shareName)
				return "", err
			}
			r.push("share "+shareName, "share "+shareName, func(ctx context.Context) error { return smb.DeleteShare(ctx, shareName) })
			return fmt.Sprintf(`\\%s\%s of %s`, r.rep.Windows.ComputerName, shareName, shareDir), nil
		})
		src = `\\` + r.rep.Windows.ComputerName + `\` + shareName
		user, pw = r.rep.Windows.ComputerName+`\`+local, r.cfg.LocalPassword
		defer func() {
			r.step(ctx, "delete local share", func(ctx context.Context) (string, error) {
				if err := smb.DeleteShare(ctx, shareName); err != nil {
					return "", err
				}
				r.done("share " + shareName)
				return "", nil
			})
			r.step(ctx, "delete local user", func(ctx context.Context) (string, error) {
				if err := smb.DeleteUser(ctx, local); err != nil {
					return "", err
				}
				r.done("user " + local)
				return "", nil
			})
		}()
	}
	vctx := map[string]string{"backend": "smb", "source": src}
	var secrets map[string]string
	if user != "" {
		secrets = map[string]string{"username": user, "password": pw.Reveal()}
	} else {
		// No --smb-credentials: the plugin maps without any, as a volume
		// asks with mapWithoutCredentials (docs/parameters.md).
		vctx["mapWithoutCredentials"] = "true"
	}
	v := r.newVolume("-smb", "", csi.VolumeCapability_AccessMode_MULTI_NODE_MULTI_WRITER, vctx, secrets)
	r.step(ctx, "stage: global mapping, link", func(ctx context.Context) (string, error) {
		detail, err := r.stage(ctx, v)
		hint := ""
		if code := status.Code(err); (code == codes.Unauthenticated || code == codes.PermissionDenied) && !r.cfg.SMB.Local {
			hint = " (selftest: the user and password come from --smb-credentials)"
		}
		return src + " mapped, " + detail, about(src, err, hint)
	})
	r.sharedSteps(ctx, v)
	r.step(ctx, "unstage", func(ctx context.Context) (string, error) {
		if _, err := r.unstage(ctx, v); err != nil {
			return "", err
		}
		root := shareRoot(src)
		if r.cfg.Plugin.SMBKeepMappings {
			return "mapping of " + root + " kept (--smb-keep-mappings)", nil
		}
		_, err := r.n.Host.SMB.Mapping(ctx, root)
		switch {
		case err == nil:
			return "", fmt.Errorf("the global mapping of %s is still there after the last volume's unstage", root)
		case !errors.Is(err, host.ErrNotFound):
			return "", err
		}
		return "mapping of " + root + " removed", nil
	})
}

// sharedSteps are the steps of a staged volume on storage selftest does
// not own (a share, a LUN): publish, write and read back, remove the test
// file again, stats, health, unpublish.
func (r *runner) sharedSteps(ctx context.Context, v *volume) {
	r.step(ctx, "publish", func(ctx context.Context) (string, error) { return r.publish(ctx, v) })
	r.step(ctx, "write and read back", func(ctx context.Context) (string, error) {
		// The file is the run's own (its name carries the run's ID): it is
		// removed before the unpublish when a later step fails or the run
		// is interrupted, and its undo is set before the write, whose
		// outcome an interrupt leaves unknown.
		r.push("file "+v.id, "test file "+v.testFile, func(ctx context.Context) error {
			if err := r.n.Admin.FileData.RemoveFile(ctx, v.testFile); err != nil && !isNotFound(err) {
				return err
			}
			return nil
		})
		return r.writeRead(ctx, v)
	})
	r.step(ctx, "remove the test file", func(ctx context.Context) (string, error) {
		if err := r.removeTestFile(ctx, v); err != nil {
			return "", err
		}
		r.done("file " + v.id)
		return "", nil
	})
	r.step(ctx, "volume stats", func(ctx context.Context) (string, error) {
		_, detail, err := r.stats(ctx, v)
		return detail, err
	})
	r.step(ctx, "volume health", func(ctx context.Context) (string, error) { return r.health(ctx, v) })
	r.step(ctx, "unpublish", func(ctx context.Context) (string, error) { return r.unpublish(ctx, v) })
}

// about puts what a failed step was about before its error and a hint
// after it, keeping the error's gRPC code; nil stays nil.
func about(what string, err error, hint string) error {
	if err == nil {
		return nil
	}
	if s, ok := status.FromError(err); ok {
		return status.Error(s.Code(), what+": "+s.Message()+hint)
	}
	return fmt.Errorf("%s: %w%s", what, err, hint)
}

// shareRoot returns \\server\share of a share path.
func shareRoot(src string) string {
	s := strings.TrimLeft(strings.ReplaceAll(src, "/", `\`), `\`)
	parts := strings.SplitN(s, `\`, 3)
	if len(parts) < 2 {
		return `\\` + s
	}
	return `\\` + parts[0] + `\` + parts[1]
}

// iscsi runs the iSCSI backend's steps against the operator's target: its
// LUN is formatted if it is blank (as any new volume's would be), and the
// test file is removed again.
func (r *runner) iscsi(ctx context.Context) {
	mark := len(r.undo)
	defer r.unwindTo(ctx, mark)
	t := r.cfg.ISCSI
	vctx := map[string]string{"backend": "iscsi", "targetPortal": t.Portal, "iqn": t.IQN, "lun": strconv.FormatUint(uint64(t.LUN), 10)}
	var secrets map[string]string
	if t.CHAPUser != "" {
		vctx["sessionCHAPAuth"] = "true"
		secrets = map[string]string{"node.session.auth.username": t.CHAPUser, "node.session.auth.password": t.CHAPSecret.Reveal()}
	}
	v := r.newVolume("-iscsi", "NTFS", csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER, vctx, secrets)
	target := fmt.Sprintf("%s at %s, LUN %d", t.IQN, t.Portal, t.LUN)
	r.step(ctx, "stage: log in, format NTFS if blank, mount", func(ctx context.Context) (string, error) {
		detail, err := r.stage(ctx, v)
		hint := ""
		switch {
		case status.Code(err) != codes.Unauthenticated:
		case t.CHAPUser == "":
			hint = " (selftest: give the target's CHAP user and secret with --iscsi-chap FILE)"
		default:
			hint = " (selftest: check the username= and password= lines of --iscsi-chap)"
		}
		return target + ", " + detail, about(target, err, hint)
	})
	r.sharedSteps(ctx, v)
	r.step(ctx, "unstage: log out", func(ctx context.Context) (string, error) {
		if _, err := r.unstage(ctx, v); err != nil {
			return "", err
		}
		sessions, err := r.n.Host.ISCSI.Sessions(ctx, t.IQN)
		if err != nil {
			return "", err
		}
		if len(sessions) > 0 {
			return fmt.Sprintf("%d session(s) to %s remain: another volume or another initiator user holds them", len(sessions), t.IQN), nil
		}
		return "logged out of " + t.IQN, nil
	})
}
