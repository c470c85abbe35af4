package config

func authSettings() []setting {
	return []setting{
		{"secrets_key_file", "", "file with the AES-256 key(s) sealing the namespaces' secrets, one base64 key a line, the current first (head -c 32 /dev/urandom | base64); without it secrets are refused (docs/tenancy.md)", str(func(c *Config) *string { return &c.SecretsKeyFile })},
	}
}

func init() { settings = append(settings, authSettings()...) }
