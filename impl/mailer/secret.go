package mailer

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// SecretKeyEnv names the environment variable holding the key that encrypts the
// passwords of mail accounts: the Base64 of 32 random bytes (`openssl rand
// -base64 32`).
const SecretKeyEnv = "CRM_SECRET_KEY"

// ErrNoSecretKey is returned where a mail account password must be encrypted or
// decrypted and no key is configured.
var ErrNoSecretKey = errors.New(SecretKeyEnv + " is not set: mail account passwords cannot be encrypted or decrypted")

// secretVersion is the first byte of every sealed secret: the format (AES-256-GCM,
// 12-byte nonce), so that a later key rotation can tell old secrets from new.
const secretVersion = 1

// SecretBox seals and opens the passwords of mail accounts with AES-256-GCM.
// Each sealed secret is bound to its account and to its use (smtp or imap), so
// a sealed value copied into another row or column does not open.
type SecretBox struct {
	aead cipher.AEAD
}

// NewSecretBox returns a SecretBox for a key given as the Base64 (standard or
// URL-safe, padded or not) of 32 bytes. An empty key is ErrNoSecretKey.
func NewSecretBox(encodedKey string) (*SecretBox, error) {
	encodedKey = strings.TrimSpace(encodedKey)
	if encodedKey == "" {
		return nil, ErrNoSecretKey
	}
	key, err := decodeBase64(encodedKey)
	if err != nil {
		return nil, fmt.Errorf("%s: not Base64", SecretKeyEnv)
	}
	if len(key) != 32 {
		return nil, fmt.Errorf("%s: the key must be 32 bytes, it is %d", SecretKeyEnv, len(key))
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", SecretKeyEnv, err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", SecretKeyEnv, err)
	}
	return &SecretBox{aead: aead}, nil
}

func secretAAD(accountID int64, use string) []byte {
	return []byte("crm mail secret\x00" + strconv.FormatInt(accountID, 10) + "\x00" + use)
}

// Seal encrypts a password of a mail account of accountID for use ("smtp" or "imap").
func (b *SecretBox) Seal(accountID int64, use, secret string) []byte {
	nonce := make([]byte, b.aead.NonceSize())
	_, _ = rand.Read(nonce) // crypto/rand.Read never fails (Go 1.24+)
	out := append([]byte{secretVersion}, nonce...)
	return b.aead.Seal(out, nonce, []byte(secret), secretAAD(accountID, use))
}

// Open decrypts what Seal encrypted. The error never contains the secret.
func (b *SecretBox) Open(accountID int64, use string, sealed []byte) (string, error) {
	n := b.aead.NonceSize()
	if len(sealed) < 1+n+b.aead.Overhead() || sealed[0] != secretVersion {
		return "", fmt.Errorf("%s password: unknown format", use)
	}
	plain, err := b.aead.Open(nil, sealed[1:1+n], sealed[1+n:], secretAAD(accountID, use))
	if err != nil {
		return "", fmt.Errorf("%s password: cannot be decrypted with this %s", use, SecretKeyEnv)
	}
	return string(plain), nil
}
