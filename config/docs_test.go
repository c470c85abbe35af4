package config

import (
	"os"
	"reflect"
	"strings"
	"testing"
)

const configDoc = "../docs/configuration.md"

// docRows maps each key of docs/configuration.md's tables to its default
// cell: rows written "| `key` | default | meaning |".
func docRows(t *testing.T) map[string]string {
	t.Helper()
	b, err := os.ReadFile(configDoc)
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string]string{}
	for _, line := range strings.Split(string(b), "\n") {
		cells := strings.Split(line, " | ")
		if !strings.HasPrefix(line, "| `") || len(cells) < 3 {
			continue
		}
		key := strings.Trim(strings.TrimPrefix(cells[0], "| "), "`")
		if _, dup := rows[key]; dup {
			t.Errorf("%s: key %s has two rows", configDoc, key)
		}
		rows[key] = cells[1]
	}
	return rows
}

// Every setting has its row in docs/configuration.md, with the code's
// default; every documented key is a setting.
func TestEverySettingIsDocumented(t *testing.T) {
	rows := docRows(t)
	known := map[string]bool{}
	for _, s := range settings {
		known[s.key] = true
		def, ok := rows[s.key]
		if !ok {
			t.Errorf("setting %s (config/config.go) has no row in %s: add `| `%s` | default | meaning |` to the table of its topic", s.key, configDoc, s.key)
			continue
		}
		if s.def != "" && !strings.HasPrefix(def, "`"+s.def+"`") {
			t.Errorf("%s: the default of %s reads %q, the code's is %q", configDoc, s.key, def, s.def)
		}
	}
	for key := range rows {
		if !known[key] {
			t.Errorf("%s documents %s, which is not a setting of config/config.go", configDoc, key)
		}
	}
}

// Every field of Config is set by some setting (so a new field cannot
// skip the settings table, and with it the documentation), except the
// ones derived from others.
func TestEveryConfigFieldHasASetting(t *testing.T) {
	derived := map[string]bool{"ConfigFile": true, "Location": true, "Clusters": true} // Clusters: clusters_file's list
	covered := map[string]bool{}
	probes := []string{"x-probe", "7", "true", "90s", "0.5", "2GiB", "4096", "a=b", "https://h:1", "login", "etcd", "auto"}
	for _, s := range settings {
		for _, v := range probes {
			var c Config
			if s.set(&c, v) != nil {
				continue
			}
			for _, f := range changedFields(reflect.ValueOf(Config{}), reflect.ValueOf(c), "") {
				covered[f] = true
			}
		}
	}
	for _, f := range fieldNames(reflect.TypeOf(Config{}), "") {
		if !derived[f] && !covered[f] {
			t.Errorf("Config.%s is set by no setting: add a row to settings in config/config.go and to %s", f, configDoc)
		}
	}
}

// fieldNames lists the leaf fields of a struct type (nested structs by
// path: Mesos.Name).
func fieldNames(typ reflect.Type, prefix string) []string {
	var out []string
	for i := range typ.NumField() {
		f := typ.Field(i)
		if f.Type.Kind() == reflect.Struct {
			out = append(out, fieldNames(f.Type, prefix+f.Name+".")...)
			continue
		}
		out = append(out, prefix+f.Name)
	}
	return out
}

func changedFields(a, b reflect.Value, prefix string) []string {
	var out []string
	for i := range a.NumField() {
		name := prefix + a.Type().Field(i).Name
		if a.Field(i).Kind() == reflect.Struct {
			out = append(out, changedFields(a.Field(i), b.Field(i), name+".")...)
			continue
		}
		if !reflect.DeepEqual(a.Field(i).Interface(), b.Field(i).Interface()) {
			out = append(out, name)
		}
	}
	return out
}
