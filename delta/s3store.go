package delta

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"tsdb/internal/fsutil"
)

// S3Config says where an S3-compatible object store is and how to sign in.
// The zero values of Region and the credentials follow the AWS conventions
// (AWS_REGION, AWS_ACCESS_KEY_ID, ... are read by the command, not here).
type S3Config struct {
	// Endpoint is a URL such as https://s3.eu-west-1.amazonaws.com or
	// http://127.0.0.1:7070; http:// turns TLS off.
	Endpoint     string
	Region       string
	AccessKey    string
	SecretKey    string
	SessionToken string
	// PathStyle addresses buckets as endpoint/bucket (what most
	// S3-compatible servers want) instead of bucket.endpoint.
	PathStyle bool
}

// ParseS3URL splits s3://bucket/prefix into its bucket and prefix (without
// slashes at either end).
func ParseS3URL(raw string) (bucket, prefix string, err error) {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != "s3" || u.Host == "" {
		return "", "", fmt.Errorf("delta: %q is not an s3://bucket/prefix URL", raw)
	}
	return u.Host, strings.Trim(u.Path, "/"), nil
}

// S3Root holds tables under s3://bucket/prefix/<table>/ and mirrors their
// data files in a local cache directory. The mirror exists because the query
// engine reads Parquet from local files: DuckDB's httpfs extension is not
// built in, and the sandbox forbids the engine network and extension loading.
// Data files are immutable (every name is unique), so a cached copy never
// goes stale; it is deleted with the object.
type S3Root struct {
	client *minio.Client
	bucket string
	prefix string
	cache  string
}

// NewS3Root connects to the store and checks that the bucket exists.
func NewS3Root(ctx context.Context, cfg S3Config, bucket, prefix, cacheDir string) (*S3Root, error) {
	u, err := url.Parse(cfg.Endpoint)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return nil, fmt.Errorf("delta: S3 endpoint %q must be an http:// or https:// URL", cfg.Endpoint)
	}
	lookup := minio.BucketLookupAuto
	if cfg.PathStyle {
		lookup = minio.BucketLookupPath
	}
	client, err := minio.New(u.Host, &minio.Options{
		Creds:        credentials.NewStaticV4(cfg.AccessKey, cfg.SecretKey, cfg.SessionToken),
		Secure:       u.Scheme == "https",
		Region:       cfg.Region,
		BucketLookup: lookup,
	})
	if err != nil {
		return nil, fmt.Errorf("delta: S3 client: %w", err)
	}
	ok, err := client.BucketExists(ctx, bucket)
	if err != nil {
		return nil, fmt.Errorf("delta: S3 bucket %s at %s: %w", bucket, cfg.Endpoint, err)
	}
	if !ok {
		return nil, fmt.Errorf("delta: S3 bucket %s does not exist at %s", bucket, cfg.Endpoint)
	}
	cache, err := filepath.Abs(cacheDir)
	if err != nil {
		return nil, fmt.Errorf("delta: %w", err)
	}
	if err := os.MkdirAll(cache, 0o755); err != nil {
		return nil, fmt.Errorf("delta: create cache %s: %w", cache, err)
	}
	return &S3Root{client: client, bucket: bucket, prefix: strings.Trim(prefix, "/"), cache: cache}, nil
}

func (r *S3Root) key(p string) string {
	if r.prefix == "" {
		return p
	}
	return r.prefix + "/" + p
}

// String names the root for logs and errors.
func (r *S3Root) String() string { return "s3://" + r.bucket + "/" + r.prefix }

// Tables implements Root: the names of the directories under the prefix
// that hold a _delta_log.
func (r *S3Root) Tables(ctx context.Context) ([]string, error) {
	var names []string
	for obj := range r.client.ListObjects(ctx, r.bucket, minio.ListObjectsOptions{Prefix: r.key("")}) {
		if obj.Err != nil {
			return nil, fmt.Errorf("delta: list %s: %w", r, obj.Err)
		}
		// Without Recursive, directories come back as keys ending in "/".
		dir := strings.TrimSuffix(strings.TrimPrefix(obj.Key, r.key("")), "/")
		if name, ok := TableName(dir); ok && strings.HasSuffix(obj.Key, "/") {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	return names, nil
}

// Table implements Root.
func (r *S3Root) Table(_ context.Context, name string) (Store, error) {
	dir := TableDir(name)
	return &S3Store{root: r, prefix: r.key(dir), cache: filepath.Join(r.cache, dir)}, nil
}

// DropTable implements Root: every object of the table is deleted, then
// the local mirror.
func (r *S3Root) DropTable(ctx context.Context, name string) error {
	st, _ := r.Table(ctx, name)
	s := st.(*S3Store)
	// The log goes first: once commit 0 is gone nobody opens the table,
	// so a crash halfway leaves unreferenced data files, not a broken table.
	for _, dir := range []string{logDir + "/", ""} {
		for obj := range r.client.ListObjects(ctx, r.bucket, minio.ListObjectsOptions{Prefix: s.prefix + "/" + dir, Recursive: true}) {
			if obj.Err != nil {
				return fmt.Errorf("delta: drop %s: %w", name, obj.Err)
			}
			if err := r.client.RemoveObject(ctx, r.bucket, obj.Key, minio.RemoveObjectOptions{}); err != nil {
				return fmt.Errorf("delta: drop %s: delete %s: %w", name, obj.Key, err)
			}
		}
	}
	if err := os.RemoveAll(s.cache); err != nil {
		return fmt.Errorf("delta: drop %s: %w", name, err)
	}
	return nil
}

// DropIncomplete implements Root. On shared storage a table without a log
// may be one another writer is creating right now, so nothing is removed.
func (r *S3Root) DropIncomplete(context.Context, string) error { return nil }

// S3Store is one table on an S3-compatible object store (see S3Root).
type S3Store struct {
	root   *S3Root
	prefix string // the table's key prefix, without a trailing slash
	cache  string // the table's local mirror of data files
}

func (s *S3Store) key(p string) string { return s.prefix + "/" + p }

// isLog tells log objects (commits, checkpoints), which are read through
// Get and never mirrored, from data files, which the engine reads locally.
func isLog(p string) bool { return strings.HasPrefix(p, logDir+"/") }

// LocalPath implements Store: the file's place in the local mirror. Fetch
// puts it there.
func (s *S3Store) LocalPath(p string) string {
	return filepath.Join(s.cache, filepath.FromSlash(p))
}

// Fetch implements Store: it downloads a data file into the local mirror
// unless it is there already.
func (s *S3Store) Fetch(ctx context.Context, p string) error {
	dst := s.LocalPath(p)
	if _, err := os.Stat(dst); err == nil {
		return nil
	}
	data, err := s.Get(ctx, p)
	if err != nil {
		return err
	}
	return s.mirror(p, data)
}

// mirror writes a data file into the local cache, atomically: a reader
// never sees half a Parquet file under its final name. (Durably too,
// which a cache does not need; one directory sync per uploaded file is
// not worth a second way of writing files.)
func (s *S3Store) mirror(p string, data []byte) error {
	if err := fsutil.WriteFile(s.LocalPath(p), data); err != nil {
		return fmt.Errorf("delta: cache %s: %w", p, err)
	}
	return nil
}

// Get implements Store. A data file is read from the mirror when it is
// there.
func (s *S3Store) Get(ctx context.Context, p string) ([]byte, error) {
	if !isLog(p) {
		if b, err := os.ReadFile(s.LocalPath(p)); err == nil {
			return b, nil
		}
	}
	obj, err := s.root.client.GetObject(ctx, s.root.bucket, s.key(p), minio.GetObjectOptions{})
	if err != nil {
		return nil, s.wrap("read", p, err)
	}
	defer obj.Close()
	b, err := io.ReadAll(obj)
	if err != nil {
		return nil, s.wrap("read", p, err)
	}
	return b, nil
}

// wrap turns a "no such key" into fs.ErrNotExist, as the Store contract
// asks, and says which object failed.
func (s *S3Store) wrap(op, p string, err error) error {
	if resp := minio.ToErrorResponse(err); resp.StatusCode == http.StatusNotFound || resp.Code == minio.NoSuchKey {
		return fmt.Errorf("delta: %s %s/%s: %w", op, s.root.bucket, s.key(p), fs.ErrNotExist)
	}
	return fmt.Errorf("delta: %s %s/%s: %w", op, s.root.bucket, s.key(p), err)
}

// Put implements Store. Data files are mirrored locally too, so the
// engine can read a file this process wrote without downloading it.
func (s *S3Store) Put(ctx context.Context, p string, data []byte) error {
	if _, err := s.root.client.PutObject(ctx, s.root.bucket, s.key(p), bytes.NewReader(data), int64(len(data)), minio.PutObjectOptions{}); err != nil {
		return s.wrap("write", p, err)
	}
	if !isLog(p) {
		return s.mirror(p, data)
	}
	return nil
}

// PutFile implements Store: the file is uploaded from disk, then becomes
// the mirrored copy.
func (s *S3Store) PutFile(ctx context.Context, p, tmp string) error {
	f, err := os.Open(tmp)
	if err != nil {
		return fmt.Errorf("delta: write %s: %w", p, err)
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return fmt.Errorf("delta: write %s: %w", p, err)
	}
	if _, err := s.root.client.PutObject(ctx, s.root.bucket, s.key(p), f, info.Size(), minio.PutObjectOptions{}); err != nil {
		return s.wrap("write", p, err)
	}
	if err := os.Rename(tmp, s.LocalPath(p)); err != nil {
		return fmt.Errorf("delta: cache %s: %w", p, err)
	}
	return nil
}

// PutIfAbsent implements Store with a conditional PUT (If-None-Match: *):
// the store refuses it with 412 when the object exists, which is how two
// writers racing for one commit version learn who won. A 409 means a
// concurrent conditional write of the same key was in flight; the request
// is retried, and then usually meets the winner's 412.
func (s *S3Store) PutIfAbsent(ctx context.Context, p string, data []byte) error {
	opts := minio.PutObjectOptions{}
	opts.SetMatchETagExcept("*")
	for attempt := 0; ; attempt++ {
		_, err := s.root.client.PutObject(ctx, s.root.bucket, s.key(p), bytes.NewReader(data), int64(len(data)), opts)
		if err == nil {
			return nil
		}
		resp := minio.ToErrorResponse(err)
		switch {
		case resp.StatusCode == http.StatusPreconditionFailed || resp.Code == minio.PreconditionFailed:
			return fmt.Errorf("delta: %s: %w", p, ErrExists)
		case resp.StatusCode == http.StatusConflict && attempt < 10:
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(time.Duration(attempt+1) * 20 * time.Millisecond):
			}
		default:
			return s.wrap("write", p, err)
		}
	}
}

// List implements Store.
func (s *S3Store) List(ctx context.Context, dir string) ([]string, error) {
	prefix := s.key(strings.Trim(dir, "/")) + "/"
	if strings.Trim(dir, "/") == "" {
		prefix = s.prefix + "/"
	}
	var out []string
	for obj := range s.root.client.ListObjects(ctx, s.root.bucket, minio.ListObjectsOptions{Prefix: prefix}) {
		if obj.Err != nil {
			return nil, s.wrap("list", dir, obj.Err)
		}
		if strings.HasSuffix(obj.Key, "/") {
			continue // a "directory"
		}
		out = append(out, path.Base(obj.Key))
	}
	sort.Strings(out)
	return out, nil
}

// ListData implements Store.
func (s *S3Store) ListData(ctx context.Context) ([]ObjectInfo, error) {
	var out []ObjectInfo
	for obj := range s.root.client.ListObjects(ctx, s.root.bucket, minio.ListObjectsOptions{Prefix: s.prefix + "/"}) {
		if obj.Err != nil {
			return nil, s.wrap("list", "", obj.Err)
		}
		name := path.Base(obj.Key)
		if strings.HasSuffix(obj.Key, "/") || !isDataFile(name) {
			continue
		}
		out = append(out, ObjectInfo{Path: name, Size: obj.Size, ModTime: obj.LastModified})
	}
	return out, nil
}

// PruneMirror deletes local copies of data files that are not in keep:
// a file whose tombstone expired before this process deleted it (another
// writer's VACUUM did) would otherwise stay in the mirror forever.
// Copies younger than an hour stay.
func (s *S3Store) PruneMirror(keep map[string]bool) (int, error) {
	ents, err := os.ReadDir(s.cache)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return 0, nil
		}
		return 0, fmt.Errorf("delta: list cache %s: %w", s.cache, err)
	}
	n := 0
	for _, e := range ents {
		if e.IsDir() || keep[e.Name()] || !isDataFile(e.Name()) {
			continue
		}
		// A copy fetched in the last hour may belong to a commit newer
		// than keep, which a query is reading now.
		if info, err := e.Info(); err != nil || time.Since(info.ModTime()) < time.Hour {
			continue
		}
		if err := os.Remove(filepath.Join(s.cache, e.Name())); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return n, fmt.Errorf("delta: uncache %s: %w", e.Name(), err)
		}
		n++
	}
	return n, nil
}

// Delete implements Store; the mirrored copy goes too.
func (s *S3Store) Delete(ctx context.Context, p string) error {
	if err := s.root.client.RemoveObject(ctx, s.root.bucket, s.key(p), minio.RemoveObjectOptions{}); err != nil {
		if err := s.wrap("delete", p, err); !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	if !isLog(p) {
		if err := os.Remove(s.LocalPath(p)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("delta: uncache %s: %w", p, err)
		}
	}
	return nil
}

// TablePath turns an s3:// (or s3a://) URI of an object under the table's
// prefix in its bucket into its table-relative path.
func (s *S3Store) TablePath(abs string) (string, bool) {
	u, err := url.Parse(abs)
	if err != nil || (u.Scheme != "s3" && u.Scheme != "s3a") || u.Host != s.root.bucket {
		return "", false
	}
	rel, ok := strings.CutPrefix(strings.TrimPrefix(u.Path, "/"), s.prefix+"/")
	if !ok || rel == "" || strings.Contains(rel, "..") {
		return "", false
	}
	return rel, true
}
