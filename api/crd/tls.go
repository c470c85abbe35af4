package crd

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"strings"
	"time"

	"github.com/ejcloud/elasticjob/registry"
)

// caValidity is how long the CA and the serving certificates are valid.
const caValidity = 10 * 365 * 24 * time.Hour

type storedCA struct {
	Cert string `json:"cert"`
	Key  string `json:"key"`
}

// CA is the webhook's certificate authority.
type CA struct {
	Cert    *x509.Certificate
	Key     *ecdsa.PrivateKey
	CertPEM []byte // the caBundle
}

// LoadCA reads the CA from its registry cell (registry.Term.WebhookCA),
// making it when there is none yet (two schedulers making it at once: the
// first one's is kept, and read by both). Every instance serves a
// certificate that the CA registered with the API server signed.
func LoadCA(ctx context.Context, cell registry.Cell, now time.Time) (*CA, error) {
	for range 3 {
		v, ok, err := cell.Get(ctx)
		if err != nil {
			return nil, fmt.Errorf("webhook ca: %w", err)
		}
		if ok {
			return parseCA(v)
		}
		b, err := newCA(now)
		if err != nil {
			return nil, err
		}
		created, err := cell.Create(ctx, b)
		if err != nil {
			return nil, fmt.Errorf("webhook ca: %w", err)
		}
		if created {
			return parseCA(b)
		}
	}
	return nil, errors.New("webhook ca: the stored CA keeps changing")
}

func newCA(now time.Time) ([]byte, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("webhook ca: key: %w", err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(), Subject: pkix.Name{CommonName: "elasticjob-webhook-ca"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(caValidity),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, fmt.Errorf("webhook ca: certificate: %w", err)
	}
	kd, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("webhook ca: key: %w", err)
	}
	return json.Marshal(storedCA{
		Cert: string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})),
		Key:  string(pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kd})),
	})
}

func parseCA(b []byte) (*CA, error) {
	var s storedCA
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("webhook ca: decode: %w", err)
	}
	cb, _ := pem.Decode([]byte(s.Cert))
	kb, _ := pem.Decode([]byte(s.Key))
	if cb == nil || kb == nil {
		return nil, errors.New("webhook ca: the stored CA is not PEM")
	}
	cert, err := x509.ParseCertificate(cb.Bytes)
	if err != nil {
		return nil, fmt.Errorf("webhook ca: %w", err)
	}
	key, err := x509.ParseECPrivateKey(kb.Bytes)
	if err != nil {
		return nil, fmt.Errorf("webhook ca: %w", err)
	}
	return &CA{Cert: cert, Key: key, CertPEM: []byte(s.Cert)}, nil
}

// Serving makes a serving certificate for host (an IP or a DNS name, as
// the webhook's URL names it), signed by the CA.
func (ca *CA) Serving(host string, now time.Time) (tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("webhook certificate: %w", err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(), Subject: pkix.Name{CommonName: host},
		NotBefore: now.Add(-time.Hour), NotAfter: ca.Cert.NotAfter,
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	if ip := net.ParseIP(host); ip != nil {
		tmpl.IPAddresses = []net.IP{ip}
	} else {
		tmpl.DNSNames = []string{host}
		if svc, ok := strings.CutSuffix(host, ".cluster.local"); ok && strings.HasSuffix(svc, ".svc") {
			tmpl.DNSNames = append(tmpl.DNSNames, svc) // the name the API server calls a Service reference by
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, &key.PublicKey, ca.Key)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("webhook certificate: %w", err)
	}
	return tls.Certificate{Certificate: [][]byte{der, ca.Cert.Raw}, PrivateKey: key}, nil
}

func serial() *big.Int {
	n, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 120))
	return n
}
