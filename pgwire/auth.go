package pgwire

import (
	"crypto/rand"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/jackc/pgx/v5/pgproto3"
	"github.com/xdg-go/scram"

	"tsdb/internal/auth"
)

var errAuthFailed = errors.New("password authentication failed")

// authenticate runs SCRAM-SHA-256 with the client for user. Unknown users
// go through the same exchange with a random verifier, so that a client
// cannot tell them from wrong passwords.
func (c *conn) authenticate(user string) error {
	creds, known := c.srv.opts.Auth.Lookup(user)
	if !known {
		creds, _ = auth.Verifier(user, randomString())
	}
	server, err := scram.SHA256.NewServer(func(string) (scram.StoredCredentials, error) { return creds, nil })
	if err != nil {
		return err
	}
	conv := server.NewConversation()
	c.be.Send(&pgproto3.AuthenticationSASL{AuthMechanisms: []string{"SCRAM-SHA-256"}})
	if err := c.be.Flush(); err != nil {
		return err
	}
	if err := c.be.SetAuthType(pgproto3.AuthTypeSASL); err != nil {
		return err
	}
	msg, err := c.be.Receive()
	if err != nil {
		return err
	}
	init, ok := msg.(*pgproto3.SASLInitialResponse)
	if !ok || init.AuthMechanism != "SCRAM-SHA-256" {
		return fmt.Errorf("%w: expected a SCRAM-SHA-256 initial response", errAuthFailed)
	}
	resp, err := conv.Step(string(init.Data))
	if err != nil {
		return fmt.Errorf("%w: %v", errAuthFailed, err)
	}
	c.be.Send(&pgproto3.AuthenticationSASLContinue{Data: []byte(resp)})
	if err := c.be.Flush(); err != nil {
		return err
	}
	if err := c.be.SetAuthType(pgproto3.AuthTypeSASLContinue); err != nil {
		return err
	}
	msg, err = c.be.Receive()
	if err != nil {
		return err
	}
	final, ok := msg.(*pgproto3.SASLResponse)
	if !ok {
		return fmt.Errorf("%w: expected a SCRAM response", errAuthFailed)
	}
	resp, err = conv.Step(string(final.Data))
	if err != nil || !conv.Valid() || !ok {
		return fmt.Errorf("%w for user %q", errAuthFailed, user)
	}
	if !known {
		return fmt.Errorf("%w for user %q", errAuthFailed, user)
	}
	c.be.Send(&pgproto3.AuthenticationSASLFinal{Data: []byte(resp)})
	return nil
}

func randomString() string {
	b := make([]byte, 24)
	rand.Read(b)
	return fmt.Sprintf("%x", b)
}

// upgradeTLS answers an SSLRequest: 'S' and a TLS handshake when TLS is
// configured, 'N' otherwise.
func (c *conn) upgradeTLS() error {
	if c.srv.opts.TLS == nil {
		_, err := c.nc.Write([]byte{'N'})
		return err
	}
	if _, err := c.nc.Write([]byte{'S'}); err != nil {
		return err
	}
	tc := tls.Server(c.nc, c.srv.opts.TLS)
	tc.SetDeadline(time.Now().Add(c.srv.opts.StartupTimeout))
	if err := tc.Handshake(); err != nil {
		return fmt.Errorf("TLS handshake: %w", err)
	}
	c.nc = tc
	c.tls = true
	c.be = pgproto3.NewBackend(tc, tc)
	c.be.SetMaxBodyLen(c.srv.opts.MaxMessageSize)
	return nil
}

// IsLoopback reports whether a listen address only accepts local clients.
func IsLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
