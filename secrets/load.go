package secrets

import (
	"fmt"
	"os"
)

// LoadKeyring reads the key file at path (secrets_key_file).
func LoadKeyring(path string) (*Keyring, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("secrets key file: %w", err)
	}
	defer clear(b)
	kr, err := ParseKeyring(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return kr, nil
}
