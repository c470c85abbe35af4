package secrets

import (
	"bytes"
	"encoding/base64"
	"errors"
	"strings"
	"testing"
)

func keyLine(b byte) string {
	return base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{b}, KeySize))
}

func TestSealOpensOnlyUnderItsNamespaceAndName(t *testing.T) {
	kr, err := ParseKeyring([]byte("# the operator's key\n" + keyLine(1) + "\n"))
	if err != nil {
		t.Fatal(err)
	}
	s, err := kr.Seal("pay", "db-password", []byte("hunter2"))
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(s.Ciphertext, []byte("hunter2")) || s.Size != 7 || s.KeyID != kr.Current() {
		t.Fatalf("sealed %+v", s)
	}
	v, err := kr.Open(s)
	if err != nil || string(v) != "hunter2" {
		t.Fatalf("open: %q %v", v, err)
	}
	moved := s
	moved.Namespace = "search" // a record copied into another namespace
	if _, err := kr.Open(moved); !errors.Is(err, ErrOpen) {
		t.Fatalf("a value moved to another namespace opened: %v", err)
	}
	renamed := s
	renamed.Name = "other"
	if _, err := kr.Open(renamed); !errors.Is(err, ErrOpen) {
		t.Fatalf("a value moved to another name opened: %v", err)
	}
	again, _ := kr.Seal("pay", "db-password", []byte("hunter2"))
	if bytes.Equal(again.Ciphertext, s.Ciphertext) {
		t.Fatal("two seals of one value are equal: the nonce is not fresh")
	}
}

func TestRotation(t *testing.T) {
	old, err := ParseKeyring([]byte("old:" + keyLine(1)))
	if err != nil {
		t.Fatal(err)
	}
	s, _ := old.Seal("pay", "db", []byte("v1"))
	oldToken := old.TaskToken("pay~nightly@-@0@-@READY@-@a@-@u")
	// The new key first, the old one still held: both open, the new seals.
	both, err := ParseKeyring([]byte("new:" + keyLine(2) + "\nold:" + keyLine(1) + "\n"))
	if err != nil {
		t.Fatal(err)
	}
	if both.Current() != "new" {
		t.Fatalf("current %s", both.Current())
	}
	if v, err := both.Open(s); err != nil || string(v) != "v1" {
		t.Fatalf("the old value under both keys: %q %v", v, err)
	}
	if !both.ValidTaskToken("pay~nightly@-@0@-@READY@-@a@-@u", oldToken) {
		t.Fatal("a running task's token of the old key is refused while the old key is held")
	}
	n, changed, err := both.Reseal(s)
	if err != nil || !changed || n.KeyID != "new" || n.Size != 2 {
		t.Fatalf("reseal: %+v %v %v", n, changed, err)
	}
	if _, changed, _ := both.Reseal(n); changed {
		t.Fatal("a value under the current key was resealed again")
	}
	// The old key removed: resealed values open, an old one says which key it needs.
	newOnly, _ := ParseKeyring([]byte("new:" + keyLine(2)))
	if v, err := newOnly.Open(n); err != nil || string(v) != "v1" {
		t.Fatalf("after the rotation: %q %v", v, err)
	}
	if _, err := newOnly.Open(s); !errors.Is(err, ErrOpen) || !strings.Contains(err.Error(), "key old") {
		t.Fatalf("a value of a removed key: %v", err)
	}
	if newOnly.ValidTaskToken("pay~nightly@-@0@-@READY@-@a@-@u", oldToken) {
		t.Fatal("a token of a removed key passes")
	}
}

func TestTaskTokens(t *testing.T) {
	kr, _ := ParseKeyring([]byte(keyLine(3)))
	other, _ := ParseKeyring([]byte(keyLine(4)))
	tok := kr.TaskToken("a@-@0@-@READY@-@x@-@1")
	switch {
	case !kr.ValidTaskToken("a@-@0@-@READY@-@x@-@1", tok):
		t.Fatal("its own token refused")
	case kr.ValidTaskToken("a@-@1@-@READY@-@x@-@1", tok):
		t.Fatal("another task's token accepted")
	case other.ValidTaskToken("a@-@0@-@READY@-@x@-@1", tok):
		t.Fatal("a token under another key accepted")
	case kr.ValidTaskToken("", tok) || kr.ValidTaskToken("a@-@0@-@READY@-@x@-@1", ""):
		t.Fatal("an empty task id or token accepted")
	}
}

func TestParseKeyringRefusesBadFiles(t *testing.T) {
	for name, body := range map[string]string{
		"empty":      "# nothing\n\n",
		"short":      base64.StdEncoding.EncodeToString([]byte("too short")),
		"not base64": "this is a passphrase, not a key!",
		"twice":      "a:" + keyLine(1) + "\na:" + keyLine(2),
		"bad id":     "a b:" + keyLine(1),
	} {
		if _, err := ParseKeyring([]byte(body)); err == nil {
			t.Errorf("%s: accepted", name)
		} else if strings.Contains(err.Error(), "passphrase") {
			t.Errorf("%s: the error quotes the file: %v", name, err)
		}
	}
	hexKey := strings.Repeat("ab", KeySize)
	if _, err := ParseKeyring([]byte(hexKey)); err != nil {
		t.Errorf("a hex key: %v", err)
	}
}

func TestNames(t *testing.T) {
	for _, ok := range []string{"db-password", "tls.key", "A_1"} {
		if err := ValidateName(ok); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
	for _, bad := range []string{"", "-x", "a/b", "a b", strings.Repeat("a", 129), "../x"} {
		if ValidateName(bad) == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	if ValidateValue(nil) == nil || ValidateValue(make([]byte, MaxValue+1)) == nil || ValidateValue([]byte("x")) != nil {
		t.Error("value sizes")
	}
}
