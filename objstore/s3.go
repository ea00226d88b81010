package objstore

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

// S3Config says where an S3 store is and how to reach it. Location.Open
// fills it from the environment (see the package doc).
type S3Config struct {
	Bucket string
	Prefix string // "" or segments without a leading or trailing '/'

	// Endpoint is the server's URL, "http(s)://host[:port]"; "" is AWS.
	Endpoint string
	// Region signs requests; "" is us-east-1.
	Region string
	// URLStyle is "path" (https://host/bucket/key), "virtual"
	// (https://bucket.host/key) or "" to let the client choose (virtual
	// for AWS, path for other servers).
	URLStyle string

	AccessKeyID     string
	SecretAccessKey string
	SessionToken    string

	// CABundle is a PEM file of CA certificates to trust for an https
	// endpoint with a private CA (AWS_CA_BUNDLE); "" trusts the system's.
	CABundle string
	// Transport carries the requests; nil is a default transport. Tests
	// wrap one to inject faults.
	Transport http.RoundTripper
	// MaxAttempts bounds the tries of one request (the first and its
	// retries, with exponential backoff and jitter, up to 1 s apart);
	// 0 is 10.
	MaxAttempts int
	// PartSize is the part size of multipart uploads, which every object
	// larger than it uses; 0 is 16 MiB (more for objects so big that
	// 10,000 parts would not hold them). The minimum is 5 MiB.
	PartSize uint64
}

// S3 is a Store in a bucket of an S3-compatible server, under a prefix.
//
// It uses the MinIO client (github.com/minio/minio-go/v7), which works with
// AWS and other S3-compatible servers, and which retries requests that
// failed for a transient cause (a network error, HTTP 429/500/502/503/504,
// SlowDown) with exponential backoff. Every upload request sends the MD5
// of its data (Content-MD5, each part its own), which the server verifies
// before it stores anything, so data damaged on the way is refused rather
// than stored.
// Objects bigger than the part size are uploaded in parts, four at a time
// (four part-sized buffers); a failed multipart upload is aborted. Every
// error names s3://bucket/key.
type S3 struct {
	client   *minio.Client
	bucket   string
	prefix   string // "" or ends with '/'
	partSize uint64
}

// putThreads is how many parts of one multipart upload go up at once.
const putThreads = 4

// minPartSize is S3's smallest part (but the last); defaultPartSize is
// the part size of uploads unless S3Config says otherwise.
const (
	minPartSize     = 5 << 20
	defaultPartSize = 16 << 20
)

// NewS3 returns the Store that cfg describes. It makes no request: Check
// does.
func NewS3(cfg S3Config) (*S3, error) {
	if err := checkBucket(cfg.Bucket); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadLocation, err)
	}
	if cfg.Prefix != "" {
		if err := checkKey(cfg.Prefix); err != nil {
			return nil, fmt.Errorf("%w: s3://%s/%s: prefix: %v", ErrBadLocation, cfg.Bucket, cfg.Prefix, err)
		}
	}
	if cfg.PartSize != 0 && cfg.PartSize < minPartSize {
		return nil, fmt.Errorf("%w: part size %d is below S3's minimum of 5 MiB", ErrBadLocation, cfg.PartSize)
	}
	host, secure := "s3.amazonaws.com", true
	if cfg.Endpoint != "" {
		u, err := parseEndpoint(cfg.Endpoint)
		if err != nil {
			return nil, err
		}
		host, secure = u.Host, u.Scheme == "https"
	}
	lookup := minio.BucketLookupAuto
	switch cfg.URLStyle {
	case "":
	case "path":
		lookup = minio.BucketLookupPath
	case "virtual":
		lookup = minio.BucketLookupDNS
	default:
		return nil, fmt.Errorf("%w: URL style %q: use path or virtual", ErrBadLocation, cfg.URLStyle)
	}
	if cfg.AccessKeyID == "" || cfg.SecretAccessKey == "" {
		return nil, fmt.Errorf("%w: s3://%s: no credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY", ErrBadLocation, cfg.Bucket)
	}
	transport := cfg.Transport
	if transport == nil {
		t, err := minio.DefaultTransport(secure)
		if err != nil {
			return nil, err
		}
		if cfg.CABundle != "" {
			pool, err := loadCABundle(cfg.CABundle)
			if err != nil {
				return nil, err
			}
			if t.TLSClientConfig == nil {
				t.TLSClientConfig = &tls.Config{MinVersion: tls.VersionTLS12}
			}
			t.TLSClientConfig.RootCAs = pool
		}
		transport = t
	}
	region := cfg.Region
	if region == "" {
		region = "us-east-1"
	}
	client, err := minio.New(host, &minio.Options{
		Creds:        credentials.NewStaticV4(cfg.AccessKeyID, cfg.SecretAccessKey, cfg.SessionToken),
		Secure:       secure,
		Transport:    transport,
		Region:       region,
		BucketLookup: lookup,
		MaxRetries:   cfg.MaxAttempts,
	})
	if err != nil {
		return nil, fmt.Errorf("%w: s3://%s: %v", ErrBadLocation, cfg.Bucket, err)
	}
	s := &S3{client: client, bucket: cfg.Bucket, partSize: cfg.PartSize}
	if cfg.Prefix != "" {
		s.prefix = cfg.Prefix + "/"
	}
	return s, nil
}

func parseEndpoint(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("%w: endpoint %q: want http://host[:port] or https://host[:port]", ErrBadLocation, raw)
	}
	switch {
	case u.Scheme != "http" && u.Scheme != "https":
		return nil, fmt.Errorf("%w: endpoint %q: want http://host[:port] or https://host[:port]", ErrBadLocation, raw)
	case u.Host == "" || u.User != nil || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "":
		return nil, fmt.Errorf("%w: endpoint %q: only a scheme, a host and a port", ErrBadLocation, raw)
	}
	return u, nil
}

func loadCABundle(path string) (*x509.CertPool, error) {
	pem, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%w: AWS_CA_BUNDLE: %v", ErrBadLocation, err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("%w: AWS_CA_BUNDLE %s: no PEM certificate in it", ErrBadLocation, path)
	}
	return pool, nil
}

func (s *S3) String() string {
	return "s3://" + s.bucket + "/" + strings.TrimSuffix(s.prefix, "/")
}

// url names an object in errors: s3://bucket/prefix/key.
func (s *S3) url(key string) string { return "s3://" + s.bucket + "/" + s.prefix + key }

// s3Error names the operation and the object of a failed request.
type s3Error struct {
	op, url  string
	err      error
	notExist bool
}

func (e *s3Error) Error() string { return e.op + " " + e.url + ": " + e.err.Error() }

func (e *s3Error) Unwrap() []error {
	if e.notExist {
		return []error{e.err, ErrNotExist}
	}
	return []error{e.err}
}

func (s *S3) fail(op, key string, err error) error {
	code := minio.ToErrorResponse(err).Code
	return &s3Error{op: op, url: s.url(key), err: err, notExist: code == minio.NoSuchKey}
}

// Check reports whether the bucket exists and the credentials may see it.
func (s *S3) Check(ctx context.Context) error {
	ok, err := s.client.BucketExists(ctx, s.bucket)
	if err != nil {
		return &s3Error{op: "check", url: "s3://" + s.bucket, err: err}
	}
	if !ok {
		return &s3Error{op: "check", url: "s3://" + s.bucket, err: errors.New("no such bucket")}
	}
	return nil
}

// Put uploads the object in one request, or in parts when it is larger
// than the part size. A source that is an io.ReaderAt and io.Seeker (a
// file) can be read again, so its requests are retried and its parts go up
// in parallel.
func (s *S3) Put(ctx context.Context, key string, r io.Reader, size int64) error {
	if err := checkKey(key); err != nil {
		return &s3Error{op: "put", url: s.url(""), err: err}
	}
	body, err := exactBody(r, size, s.url(key))
	if err != nil {
		return fmt.Errorf("put: %w", err)
	}
	// Each request carries the MD5 of its data (Content-MD5), computed
	// before it is sent, which the server verifies before it stores
	// anything; every S3-compatible server does. Not the newer trailing
	// x-amz-checksum-* headers: minio-go v7.4.1 hashes a request body
	// once, so a request retried after its connection broke mid-body would
	// carry a wrong checksum (and parts read from a file would not be
	// retried at all); some servers refuse those headers too. Parts are
	// read into putThreads buffers and go up in parallel.
	partSize := s.partSize
	if partSize == 0 {
		partSize = defaultPartSize
	}
	if size > int64(partSize) {
		_, ps, _, err := minio.OptimalPartInfo(size, partSize) // larger parts for huge objects
		if err != nil {
			return s.fail("put", key, err)
		}
		partSize = uint64(ps)
	}
	_, err = s.client.PutObject(ctx, s.bucket, s.prefix+key, body, size, minio.PutObjectOptions{
		ContentType:           "application/octet-stream",
		SendContentMd5:        true,
		DisableContentSha256:  true,
		PartSize:              partSize,
		NumThreads:            putThreads,
		ConcurrentStreamParts: true,
	})
	if err != nil {
		return s.fail("put", key, err)
	}
	return nil
}

// Open stats the object, then reads it with ranged GET requests that must
// match the ETag the stat saw: an object replaced meanwhile fails the read
// rather than mixing two versions. Reads use ctx.
func (s *S3) Open(ctx context.Context, key string) (Object, error) {
	if err := checkKey(key); err != nil {
		return nil, &s3Error{op: "open", url: s.url(""), err: err}
	}
	info, err := s.client.StatObject(ctx, s.bucket, s.prefix+key, minio.StatObjectOptions{})
	if err != nil {
		return nil, s.fail("open", key, err)
	}
	opts := minio.GetObjectOptions{}
	if info.ETag != "" {
		if err := opts.SetMatchETag(info.ETag); err != nil {
			return nil, s.fail("open", key, err)
		}
	}
	obj, err := s.client.GetObject(ctx, s.bucket, s.prefix+key, opts)
	if err != nil {
		return nil, s.fail("open", key, err)
	}
	return &s3Object{obj: obj, size: info.Size, s: s, key: key}, nil
}

// s3Object reads an object through the client's ranged GETs. Its errors
// name the object; io.EOF is passed as it is.
type s3Object struct {
	obj  *minio.Object
	size int64
	s    *S3
	key  string
}

func (o *s3Object) Size() int64 { return o.size }

func (o *s3Object) ReadAt(p []byte, off int64) (int, error) {
	if off >= o.size {
		return 0, io.EOF // no request for what is not there
	}
	n, err := o.obj.ReadAt(p, off)
	return n, o.wrap(err)
}

func (o *s3Object) Read(p []byte) (int, error) {
	n, err := o.obj.Read(p)
	return n, o.wrap(err)
}

func (o *s3Object) Seek(offset int64, whence int) (int64, error) {
	n, err := o.obj.Seek(offset, whence)
	return n, o.wrap(err)
}

func (o *s3Object) Close() error { return o.wrap(o.obj.Close()) }

func (o *s3Object) wrap(err error) error {
	if err == nil || err == io.EOF {
		return err
	}
	return o.s.fail("read", o.key, err)
}

// Stat describes the object (a HEAD request).
func (s *S3) Stat(ctx context.Context, key string) (Info, error) {
	if err := checkKey(key); err != nil {
		return Info{}, &s3Error{op: "stat", url: s.url(""), err: err}
	}
	info, err := s.client.StatObject(ctx, s.bucket, s.prefix+key, minio.StatObjectOptions{})
	if err != nil {
		return Info{}, s.fail("stat", key, err)
	}
	return Info{Key: key, Size: info.Size, ModTime: info.LastModified}, nil
}

// List lists the objects under prefix (ListObjectsV2, page by page).
func (s *S3) List(ctx context.Context, prefix string) ([]Info, error) {
	if err := checkPrefix(prefix); err != nil {
		return nil, &s3Error{op: "list", url: s.url(""), err: err}
	}
	var out []Info
	for obj := range s.client.ListObjectsIter(ctx, s.bucket, minio.ListObjectsOptions{Prefix: s.prefix + prefix, Recursive: true}) {
		if obj.Err != nil {
			return nil, s.fail("list", prefix, obj.Err)
		}
		key, ok := strings.CutPrefix(obj.Key, s.prefix)
		if !ok || key == "" || strings.HasSuffix(key, "/") {
			continue // a "directory" marker some tools write
		}
		out = append(out, Info{Key: key, Size: obj.Size, ModTime: obj.LastModified})
	}
	return out, nil
}

// Delete removes the object.
func (s *S3) Delete(ctx context.Context, key string) error {
	if err := checkKey(key); err != nil {
		return &s3Error{op: "delete", url: s.url(""), err: err}
	}
	err := s.client.RemoveObject(ctx, s.bucket, s.prefix+key, minio.RemoveObjectOptions{})
	if err != nil && minio.ToErrorResponse(err).Code != minio.NoSuchKey {
		return s.fail("delete", key, err)
	}
	return nil
}

// abortUploads aborts the multipart uploads under prefix that a killed
// process left open (their parts take space until aborted). Only call it
// when no upload is running (under the rebuild lock).
func (s *S3) abortUploads(ctx context.Context, prefix string) ([]string, error) {
	var keys []string
	for u := range s.client.ListIncompleteUploads(ctx, s.bucket, s.prefix+prefix, true) {
		if u.Err != nil {
			return keys, s.fail("list uploads", prefix, u.Err)
		}
		keys = append(keys, u.Key)
	}
	var aborted []string
	for _, k := range keys {
		if err := s.client.RemoveIncompleteUpload(ctx, s.bucket, k); err != nil {
			return aborted, &s3Error{op: "abort upload", url: "s3://" + s.bucket + "/" + k, err: err}
		}
		aborted = append(aborted, "s3://"+s.bucket+"/"+k)
	}
	return aborted, nil
}

// checkBucket applies S3's rules for bucket names: 3 to 63 lower-case
// letters, digits, dots and hyphens, starting and ending with a letter or
// digit, no "..", and not an IP address.
func checkBucket(b string) error {
	if len(b) < 3 || len(b) > 63 {
		return fmt.Errorf("bucket %q: a bucket name has 3 to 63 characters", b)
	}
	for i := 0; i < len(b); i++ {
		c := b[i]
		ok := c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '.' || c == '-'
		if !ok {
			return fmt.Errorf("bucket %q: only lower-case letters, digits, '.' and '-'", b)
		}
	}
	alnum := func(c byte) bool { return c >= 'a' && c <= 'z' || c >= '0' && c <= '9' }
	if !alnum(b[0]) || !alnum(b[len(b)-1]) {
		return fmt.Errorf("bucket %q: must start and end with a letter or digit", b)
	}
	if strings.Contains(b, "..") || strings.Contains(b, ".-") || strings.Contains(b, "-.") {
		return fmt.Errorf("bucket %q: no \"..\", \".-\" or \"-.\"", b)
	}
	if isIPv4(b) {
		return fmt.Errorf("bucket %q: looks like an IP address", b)
	}
	return nil
}

func isIPv4(s string) bool {
	parts := strings.Split(s, ".")
	if len(parts) != 4 {
		return false
	}
	for _, p := range parts {
		if p == "" || len(p) > 3 || strings.Trim(p, "0123456789") != "" {
			return false
		}
	}
	return true
}
