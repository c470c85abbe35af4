package api

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"
)

// ReplicatedStore operates the cluster the registry is replicated in
// (registry=etcd: store/etcd.Admin implements it). Its errors may carry
// the HTTP status to answer (HTTPStatus() int).
type ReplicatedStore interface {
	// Members lists the members: health, leader, raft index, sizes, alarms.
	Members(ctx context.Context) (any, error)
	// RemoveMember removes a member by name or hex id.
	RemoveMember(ctx context.Context, nameOrID string) error
	// AddMemberAny adds a member and returns what to start it with.
	AddMemberAny(ctx context.Context, name, peerURL string) (any, error)
	// BackupAny writes the registry's backup to w.
	BackupAny(ctx context.Context, w io.Writer) (any, error)
	// RestoreAny replaces the registry with a backup.
	RestoreAny(ctx context.Context, r io.Reader) (any, error)
}

// maxBackupBytes bounds a restore's body (a registry of 100,000 jobs
// backs up to about 100 MiB).
const maxBackupBytes = 1 << 30

func (s *operateHandlers) replicatedOrErr() (ReplicatedStore, error) {
	if s.replicated == nil {
		return nil, fmt.Errorf("%w: the registry is not replicated here (registry=etcd runs it on a replicated store)", ErrNotFound)
	}
	return s.replicated, nil
}

// statusErr gives an error that names its HTTP status the status of the
// API's sentinel that says the same.
func statusErr(err error) error {
	var hs interface{ HTTPStatus() int }
	if !errors.As(err, &hs) {
		return err
	}
	switch hs.HTTPStatus() {
	case http.StatusBadRequest:
		return fmt.Errorf("%w: %w", ErrBadRequest, err)
	case http.StatusNotFound:
		return fmt.Errorf("%w: %w", ErrNotFound, err)
	case http.StatusConflict:
		return fmt.Errorf("%w: %w", ErrConflict, err)
	case http.StatusServiceUnavailable:
		return fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	return err
}

func (s *operateHandlers) storeMembers(c *gin.Context) {
	rs, err := s.replicatedOrErr()
	if err == nil {
		var v any
		if v, err = rs.Members(c); err == nil {
			c.JSON(http.StatusOK, v)
			return
		}
	}
	writeError(c, s.log, statusErr(err))
}

// AddMember is the body of POST /api/operate/store/members.
type AddMember struct {
	Name    string `json:"name"`
	PeerURL string `json:"peerURL"`
}

func (s *operateHandlers) addStoreMember(c *gin.Context) {
	rs, err := s.replicatedOrErr()
	if err != nil {
		writeError(c, s.log, err)
		return
	}
	body, err := readBody(c, s.maxBody)
	if err != nil {
		writeError(c, s.log, err)
		return
	}
	var req AddMember
	if err := decodeStrict(body, &req); err != nil {
		writeError(c, s.log, err)
		return
	}
	if req.Name == "" || req.PeerURL == "" {
		writeError(c, s.log, fmt.Errorf("%w: name and peerURL are required", ErrBadRequest))
		return
	}
	v, err := rs.AddMemberAny(c, req.Name, req.PeerURL)
	if err != nil {
		writeError(c, s.log, statusErr(err))
		return
	}
	c.JSON(http.StatusCreated, v)
}

func (s *operateHandlers) removeStoreMember(c *gin.Context) {
	rs, err := s.replicatedOrErr()
	if err == nil {
		if err = rs.RemoveMember(c, c.Param("member")); err == nil {
			c.Status(http.StatusNoContent)
			return
		}
	}
	writeError(c, s.log, statusErr(err))
}

func (s *operateHandlers) backupStore(c *gin.Context) {
	rs, err := s.replicatedOrErr()
	if err != nil {
		writeError(c, s.log, err)
		return
	}
	c.Header("Content-Type", "application/octet-stream")
	c.Header("Content-Disposition", fmt.Sprintf(`attachment; filename="elasticjob-registry-%s.ndjson"`, s.clock.Now().UTC().Format("20060102T150405Z")))
	c.Status(http.StatusOK)
	if _, err := rs.BackupAny(c, c.Writer); err != nil {
		// Headers are sent: the body ends without its trailer, which a
		// restore refuses.
		s.log.Error("api: backup cut short", "err", err)
	}
}

func (s *operateHandlers) restoreStore(c *gin.Context) {
	rs, err := s.replicatedOrErr()
	if err != nil {
		writeError(c, s.log, err)
		return
	}
	ctx, cancel := context.WithTimeout(c, 10*time.Minute)
	defer cancel()
	v, err := rs.RestoreAny(ctx, http.MaxBytesReader(c.Writer, c.Request.Body, maxBackupBytes))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			err = fmt.Errorf("%w: the backup exceeds %d bytes", ErrTooLarge, maxBackupBytes)
		}
		writeError(c, s.log, statusErr(err))
		return
	}
	c.JSON(http.StatusOK, v)
}
