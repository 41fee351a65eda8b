package contract

import "testing"

func TestParseAlias(t *testing.T) {
	for _, tc := range []struct {
		in           string
		vendor, ours string
		wantErr      bool
	}{
		{in: "LUN=diskLUN", vendor: "LUN", ours: "diskLUN"},
		{in: "iscsiTargetIqn=IQN", vendor: "iscsiTargetIqn", ours: "iqn"},
		{in: " p1 = targetportal ", vendor: "p1", ours: "targetPortal"},
		{in: "node_attach_driver=backend", vendor: "node_attach_driver", ours: "backend"},
		{in: "smbPath=source", vendor: "smbPath", ours: "source"},
		{in: "lun=diskLUN", vendor: "lun", ours: "diskLUN"},
		{in: "diskLUN=lun", vendor: "diskLUN", ours: "lun"},
		{in: "a=b=diskSerial", wantErr: true}, // target "b=diskSerial" is not a key
		{in: "x=csi.storage.k8s.io/pvc/name", vendor: "x", ours: "csi.storage.k8s.io/pvc/name"},

		{in: "", wantErr: true},
		{in: "LUN", wantErr: true},
		{in: "=diskLUN", wantErr: true},
		{in: "LUN=", wantErr: true},
		{in: "LUN=nosuch", wantErr: true},
		{in: "user=username", wantErr: true},                    // secret key target
		{in: "diskLUN=diskLUN", wantErr: true},                  // itself
		{in: "DISKLUN=disklun", wantErr: true},                  // itself, other case
		{in: "diskSerial=diskLUN", wantErr: true},               // contract key of the same backend
		{in: "fsType=diskLUN", wantErr: true},                   // common key
		{in: "lun=backend", wantErr: true},                      // common target
		{in: "csi.storage.k8s.io/fstype=fsType", wantErr: true}, // reserved prefix
		{in: "password=source", wantErr: true},                  // secret key as vendor key
	} {
		t.Run(tc.in, func(t *testing.T) {
			v, o, err := ParseAlias(tc.in)
			if tc.wantErr {
				if err == nil {
					t.Fatalf("ParseAlias = %q, %q, want an error", v, o)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseAlias: %v", err)
			}
			if v != tc.vendor || o != tc.ours {
				t.Fatalf("got %q=%q, want %q=%q", v, o, tc.vendor, tc.ours)
			}
		})
	}
}

func TestValidatePreset(t *testing.T) {
	for _, p := range []string{"azure-disk", "aws-ebs", "gce-pd", "vsphere"} {
		if err := ValidatePreset(p); err != nil {
			t.Errorf("%s: %v", p, err)
		}
	}
	for _, p := range []string{"", "azure", "Azure-Disk", "ebs"} {
		if ValidatePreset(p) == nil {
			t.Errorf("%q accepted", p)
		}
	}
}

func TestParseKind(t *testing.T) {
	for in, want := range map[string]Kind{"disk": KindDisk, "SMB": KindSMB, " iscsi ": KindISCSI} {
		if got, err := ParseKind(in); err != nil || got != want {
			t.Errorf("ParseKind(%q) = %q, %v", in, got, err)
		}
	}
	if _, err := ParseKind("nfs"); err == nil {
		t.Error("nfs accepted")
	}
}

func TestOptionsValidate(t *testing.T) {
	for _, tc := range []struct {
		name    string
		o       Options
		wantErr bool
	}{
		{name: "zero"},
		{name: "full", o: Options{DefaultKind: KindSMB, Presets: []string{"azure-disk", "vsphere", "aws-ebs", "gce-pd"},
			Aliases: map[string]string{"iscsiTargetIqn": "iqn", "LUN": "diskLUN"}, VolumeIDDisk: "serial"}},
		{name: "bad default kind", o: Options{DefaultKind: "nfs"}, wantErr: true},
		{name: "default kind not lower case", o: Options{DefaultKind: "SMB"}, wantErr: true},
		{name: "bad volume ID disk", o: Options{VolumeIDDisk: "uuid"}, wantErr: true},
		{name: "bad preset", o: Options{Presets: []string{"nope"}}, wantErr: true},
		{name: "bad alias", o: Options{Aliases: map[string]string{"x": "nosuch"}}, wantErr: true},
		{name: "alias vendor key twice by case", o: Options{Aliases: map[string]string{"x": "diskLUN", "X": "diskSerial"}}, wantErr: true},
		{name: "alias same vendor key and target by case", o: Options{Aliases: map[string]string{"x": "diskLUN", "X": "disklun"}}},
		{name: "alias conflicts with preset", o: Options{Presets: []string{"azure-disk"}, Aliases: map[string]string{"lun": "diskNumber"}}, wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.o.Validate(); (err != nil) != tc.wantErr {
				t.Fatalf("Validate = %v, wantErr %v", err, tc.wantErr)
			}
		})
	}
}

func TestUserAliasReplacesPresetAlias(t *testing.T) {
	// Validate refuses this combination; Parse still behaves
	// deterministically: the user's alias wins.
	o := Options{Presets: []string{"azure-disk"}, Aliases: map[string]string{"LUN": "diskNumber"}}
	v, err := Parse(Request{VolumeID: "v", PublishContext: m("LUN", "4")}, o)
	if err != nil {
		t.Fatal(err)
	}
	if v.Disk.Selector.Number == nil || *v.Disk.Selector.Number != 4 || v.Disk.Selector.LUN != nil {
		t.Fatalf("selector %+v", v.Disk.Selector)
	}
}
