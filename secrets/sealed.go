package secrets

import (
	"fmt"
	"regexp"
	"time"
)

// Meta is what anyone with a role in the namespace may see of a secret:
// never its value, nor a digest of it.
type Meta struct {
	Name      string    `json:"name"`
	Namespace string    `json:"namespace"`
	Size      int       `json:"size"` // bytes of the value
	KeyID     string    `json:"keyId"`
	Version   int       `json:"version"` // 1 when created, +1 each overwrite
	CreatedBy string    `json:"createdBy"`
	CreatedAt time.Time `json:"createdAt"`
	UpdatedBy string    `json:"updatedBy"`
	UpdatedAt time.Time `json:"updatedAt"`
}

// Sealed is a secret as the registry keeps it: its metadata and its value
// encrypted (Keyring.Seal).
type Sealed struct {
	Meta
	Nonce      []byte `json:"nonce"`
	Ciphertext []byte `json:"ciphertext"`
}

// MaxValue is the largest secret value.
const MaxValue = 64 << 10

var nameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`)

// ErrInvalid wraps a bad secret name or value.
var ErrInvalid = fmt.Errorf("invalid secret")

// ValidateName checks a secret's name: 1-128 letters, digits, '.', '_'
// or '-', starting with a letter or digit.
func ValidateName(name string) error {
	if !nameRE.MatchString(name) {
		return fmt.Errorf("%w: a secret's name must be 1-128 letters, digits, '.', '_' or '-', starting with a letter or digit", ErrInvalid)
	}
	return nil
}

// ValidateValue checks a value's size.
func ValidateValue(v []byte) error {
	switch {
	case len(v) == 0:
		return fmt.Errorf("%w: the value is empty", ErrInvalid)
	case len(v) > MaxValue:
		return fmt.Errorf("%w: the value has %d bytes, at most %d", ErrInvalid, len(v), MaxValue)
	}
	return nil
}
