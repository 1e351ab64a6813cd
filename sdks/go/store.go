package keyforge

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
)

// Store is where the client keeps what it needs between launches: the last verified offline token of each
// license (never the license key itself: entries are named by a digest of it), the keys fetched from the JWKS,
// this installation's random device id, the device key pairs of air-gapped activations and the usage queued
// offline. Implementations must be safe for concurrent use.
type Store interface {
	// Get returns the value and true, or false when there is none.
	Get(key string) (string, bool, error)
	Set(key, value string) error
	Delete(key string) error
}

// MemoryStore keeps everything in memory: lost when the process ends (the default store).
type MemoryStore struct {
	mu     sync.Mutex
	values map[string]string
}

// NewMemoryStore returns an empty MemoryStore.
func NewMemoryStore() *MemoryStore { return &MemoryStore{values: map[string]string{}} }

func (m *MemoryStore) Get(key string) (string, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	value, ok := m.values[key]
	return value, ok, nil
}

func (m *MemoryStore) Set(key, value string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.values == nil {
		m.values = map[string]string{}
	}
	m.values[key] = value
	return nil
}

func (m *MemoryStore) Delete(key string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.values, key)
	return nil
}

// FileStore keeps one file per entry in a directory that only the user can read: the directory is created
// with mode 0700 and every file with 0600 (on POSIX systems; on Windows the user's profile directory is the
// usual protection). Each write goes to a temporary file renamed over the entry, so a crash mid-write never
// leaves half a value. Safe for concurrent use by goroutines; as with the TypeScript SDK's FileStore, one
// process uses a directory at a time.
type FileStore struct {
	dir string
	mu  sync.Mutex
}

// NewFileStore opens (creating it when missing, mode 0700) the directory dir as a store.
func NewFileStore(dir string) (*FileStore, error) {
	absolute, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(absolute, 0o700); err != nil {
		return nil, fmt.Errorf("keyforge: store directory: %w", err)
	}
	// MkdirAll leaves an existing directory's mode alone: tighten it, as the store holds device private keys.
	if err := os.Chmod(absolute, 0o700); err != nil {
		return nil, fmt.Errorf("keyforge: store directory: %w", err)
	}
	return &FileStore{dir: absolute}, nil
}

// Dir is the store's absolute directory.
func (s *FileStore) Dir() string { return s.dir }

// fileName maps a key to a file name: letters, digits, '-', '_' as is, every other byte as %XX.
func fileName(key string) string {
	var b strings.Builder
	for i := 0; i < len(key); i++ {
		c := key[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String() + ".json"
}

func (s *FileStore) Get(key string) (string, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	data, err := os.ReadFile(filepath.Join(s.dir, fileName(key)))
	if errors.Is(err, fs.ErrNotExist) {
		return "", false, nil
	}
	if err != nil {
		return "", false, err
	}
	return string(data), true, nil
}

func (s *FileStore) Set(key, value string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	suffix := make([]byte, 6)
	_, _ = rand.Read(suffix)
	target := filepath.Join(s.dir, fileName(key))
	temporary := target + "." + hex.EncodeToString(suffix) + ".tmp"
	file, err := os.OpenFile(temporary, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	_, err = file.WriteString(value)
	if syncErr := file.Sync(); err == nil {
		err = syncErr
	}
	if closeErr := file.Close(); err == nil {
		err = closeErr
	}
	if err == nil {
		err = os.Rename(temporary, target)
	}
	if err != nil {
		_ = os.Remove(temporary)
	}
	return err
}

func (s *FileStore) Delete(key string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	err := os.Remove(filepath.Join(s.dir, fileName(key)))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
}
