package api

import (
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/ejcloud/elasticjob/registry"
	"github.com/ejcloud/elasticjob/secrets"
	"github.com/ejcloud/elasticjob/store"
)

// A namespace's secrets (docs/tenancy.md, "Secrets"): an editor writes a
// value, anyone with a role there lists the names and their metadata, and
// nothing ever reads a value back: the only way out is to the executor of
// a running task of a job that names the secret (POST
// /executor/v1/secrets, secretfetch.go).

// secretBody is PUT /api/namespaces/{name}/secrets/{secret}: the value as
// text, or as base64 for bytes that are not.
type secretBody struct {
	Value       *string `json:"value"`
	ValueBase64 *string `json:"valueBase64"`
}

func (b secretBody) bytes() ([]byte, error) {
	switch {
	case (b.Value == nil) == (b.ValueBase64 == nil):
		return nil, fmt.Errorf("%w: send the value as value (text) or valueBase64, one of them", ErrBadRequest)
	case b.Value != nil:
		return []byte(*b.Value), nil
	}
	v, err := base64.StdEncoding.DecodeString(*b.ValueBase64)
	if err != nil {
		return nil, fmt.Errorf("%w: valueBase64 is not base64", ErrBadRequest)
	}
	return v, nil
}

// keyring is the operator's keys, or the error that says how to set one.
func (s *tenancyHandlers) keyring() (*secrets.Keyring, error) {
	if s.secrets == nil {
		return nil, fmt.Errorf("%w: %v", ErrConflict, secrets.ErrNoKey)
	}
	return s.secrets, nil
}

func secretParam(c *gin.Context) (string, error) {
	name := c.Param("secret")
	if err := secrets.ValidateName(name); err != nil {
		return "", fmt.Errorf("%w: %v", ErrBadRequest, strings.TrimPrefix(err.Error(), secrets.ErrInvalid.Error()+": "))
	}
	return name, nil
}

func secretErr(err error) error {
	if errors.Is(err, registry.ErrSecretNotFound) {
		return fmt.Errorf("%w: %v", ErrNotFound, strings.TrimPrefix(err.Error(), registry.ErrSecretNotFound.Error()+": "))
	}
	return err
}

func (s *tenancyHandlers) listSecrets(c *gin.Context) {
	list, err := s.reg.Tenancy().Secrets(c, nsOf(c))
	if err != nil {
		writeError(c, s.log, err)
		return
	}
	out := make([]secrets.Meta, 0, len(list))
	for _, sec := range list {
		out = append(out, sec.Meta)
	}
	c.JSON(http.StatusOK, out)
}

func (s *tenancyHandlers) getSecret(c *gin.Context) {
	name, err := secretParam(c)
	if err != nil {
		writeError(c, s.log, err)
		return
	}
	sec, _, err := s.reg.Tenancy().Secret(c, nsOf(c), name)
	if err != nil {
		writeError(c, s.log, secretErr(err))
		return
	}
	c.JSON(http.StatusOK, sec.Meta)
}

// putSecret stores a value, new (201) or over the old one (200): the
// value is sealed before it is stored and is never answered.
func (s *tenancyHandlers) putSecret(c *gin.Context) {
	kr, err := s.keyring()
	if err == nil {
		err = s.storeSecret(c, kr)
	}
	if err != nil {
		writeError(c, s.log, err)
	}
}

func (s *tenancyHandlers) storeSecret(c *gin.Context, kr *secrets.Keyring) error {
	name, err := secretParam(c)
	if err != nil {
		return err
	}
	body, err := readBody(c, s.maxBody)
	if err != nil {
		return err
	}
	defer clear(body)
	var req secretBody
	if err := decodeStrict(body, &req); err != nil {
		return err
	}
	value, err := req.bytes()
	if err != nil {
		return err
	}
	defer clear(value)
	if err := secrets.ValidateValue(value); err != nil {
		return fmt.Errorf("%w: %v", ErrBadRequest, strings.TrimPrefix(err.Error(), secrets.ErrInvalid.Error()+": "))
	}
	ns, who, now := nsOf(c), principal(c).Name, s.clock.Now().UTC()
	sealed, err := kr.Seal(ns, name, value)
	if err != nil {
		return err
	}
	old, version, err := s.reg.Tenancy().Secret(c, ns, name)
	switch {
	case errors.Is(err, registry.ErrSecretNotFound):
		version = registry.NewSecret
		sealed.Version, sealed.CreatedBy, sealed.CreatedAt = 1, who, now
	case err != nil:
		return err
	default:
		sealed.Version, sealed.CreatedBy, sealed.CreatedAt = old.Version+1, old.CreatedBy, old.CreatedAt
	}
	sealed.UpdatedBy, sealed.UpdatedAt = who, now
	if err := s.reg.Tenancy().PutSecret(c, sealed, version); err != nil {
		if errors.Is(err, store.ErrExists) || errors.Is(err, store.ErrConflict) {
			return fmt.Errorf("%w: secret '%s' was written by another request at the same time; send it again", ErrConflict, name)
		}
		if errors.Is(err, store.ErrNotFound) {
			return fmt.Errorf("%w: namespace '%s' does not exist", ErrNotFound, ns)
		}
		return err
	}
	code := http.StatusOK
	if version == registry.NewSecret {
		code = http.StatusCreated
	}
	c.JSON(code, sealed.Meta)
	return nil
}

// deleteSecret deletes a secret no job of the namespace names.
func (s *tenancyHandlers) deleteSecret(c *gin.Context) {
	name, err := secretParam(c)
	if err != nil {
		writeError(c, s.log, err)
		return
	}
	if _, _, err := s.reg.Tenancy().Secret(c, nsOf(c), name); err != nil {
		writeError(c, s.log, secretErr(err))
		return
	}
	all, err := s.regOf(c).Config().Jobs(c)
	if err != nil {
		writeError(c, s.log, err)
		return
	}
	var users []string
	for _, j := range all {
		for _, n := range j.OwnSecrets() {
			if n == name {
				users = append(users, j.JobName)
				break
			}
		}
	}
	if len(users) > 0 {
		writeError(c, s.log, fmt.Errorf("%w: secret '%s' is named by job %s: remove it from their secrets first", ErrConflict, name, strings.Join(users, ", ")))
		return
	}
	if err := s.reg.Tenancy().DeleteSecret(c, nsOf(c), name); err != nil {
		writeError(c, s.log, secretErr(err))
		return
	}
	c.Status(http.StatusNoContent)
}

// resealSecrets seals every secret of every namespace under the current
// key (the first of secrets_key_file): the middle step of a key rotation.
// Values already under it are left; a value that opens under no key of
// the file stops the run with its name (nothing is lost: it stays as it
// was).
func (s *tenancyHandlers) resealSecrets(c *gin.Context) {
	kr, err := s.keyring()
	if err != nil {
		writeError(c, s.log, err)
		return
	}
	nss, err := s.reg.Tenancy().SecretNamespaces(c)
	if err != nil {
		writeError(c, s.log, err)
		return
	}
	resealed, kept := 0, 0
	for _, ns := range nss {
		list, err := s.reg.Tenancy().Secrets(c, ns)
		if err != nil {
			writeError(c, s.log, err)
			return
		}
		for _, listed := range list {
			// Read it again with its version: a value written since the
			// listing is resealed as it is now, never the listed one.
			cur, version, err := s.reg.Tenancy().Secret(c, ns, listed.Name)
			if errors.Is(err, registry.ErrSecretNotFound) {
				continue // deleted meanwhile
			}
			if err != nil {
				writeError(c, s.log, err)
				return
			}
			n, changed, err := kr.Reseal(cur)
			if err != nil {
				writeError(c, s.log, fmt.Errorf("%w: %v (%d resealed before it)", ErrConflict, err, resealed))
				return
			}
			if !changed {
				kept++
				continue
			}
			// The value is the same: the same version. A conflict means it
			// was overwritten meanwhile, under the current key already.
			if err := s.reg.Tenancy().PutSecret(c, n, version); err != nil && !errors.Is(err, store.ErrConflict) {
				writeError(c, s.log, secretErr(err))
				return
			}
			resealed++
		}
	}
	c.JSON(http.StatusOK, gin.H{"key": kr.Current(), "resealed": resealed, "alreadyCurrent": kept})
}
