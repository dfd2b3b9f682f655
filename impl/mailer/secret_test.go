package mailer_test

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"strings"
	"testing"

	"github.com/crmservice/crm/impl/mailer"
)

// testSecretBox is a SecretBox with a fresh random key.
func testSecretBox(t *testing.T) *mailer.SecretBox {
	t.Helper()
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	box, err := mailer.NewSecretBox(base64.StdEncoding.EncodeToString(key))
	if err != nil {
		t.Fatal(err)
	}
	return box
}

func TestSecretBox(t *testing.T) {
	box := testSecretBox(t)
	sealed := box.Seal(7, "smtp", "pa55 word")
	if bytes.Contains(sealed, []byte("pa55")) {
		t.Error("the sealed secret contains the password")
	}
	if got, err := box.Open(7, "smtp", sealed); err != nil || got != "pa55 word" {
		t.Errorf("Open = %q, %v", got, err)
	}
	if bytes.Equal(sealed, box.Seal(7, "smtp", "pa55 word")) {
		t.Error("two seals of one secret are equal: the nonce is not fresh")
	}
	for _, tc := range []struct {
		name    string
		account int64
		use     string
		sealed  []byte
		box     *mailer.SecretBox
	}{
		{"another account", 8, "smtp", sealed, box},
		{"another use", 7, "imap", sealed, box},
		{"another key", 7, "smtp", sealed, testSecretBox(t)},
		{"tampered", 7, "smtp", append(bytes.Clone(sealed[:len(sealed)-1]), sealed[len(sealed)-1]^1), box},
		{"truncated", 7, "smtp", sealed[:5], box},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.box.Open(tc.account, tc.use, tc.sealed)
			if err == nil || strings.Contains(err.Error(), "pa55") {
				t.Errorf("Open = %v", err)
			}
		})
	}
	t.Run("keys", func(t *testing.T) {
		if _, err := mailer.NewSecretBox(""); !errors.Is(err, mailer.ErrNoSecretKey) {
			t.Errorf("empty key: %v", err)
		}
		if _, err := mailer.NewSecretBox(base64.StdEncoding.EncodeToString(make([]byte, 16))); err == nil || !strings.Contains(err.Error(), "32 bytes") {
			t.Errorf("short key: %v", err)
		}
		if _, err := mailer.NewSecretBox("not base64!"); err == nil {
			t.Error("a key that is not Base64 was accepted")
		}
		if _, err := mailer.NewSecretBox(base64.RawURLEncoding.EncodeToString(make([]byte, 32))); err != nil {
			t.Errorf("URL-safe unpadded key: %v", err)
		}
	})
}
