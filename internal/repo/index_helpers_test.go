package repo

import (
	"errors"
	"io/fs"

	"github.com/hashgate/hashgate/internal/apperr"
)

func fsSub(f fs.FS, dir string) (fs.FS, error) { return fs.Sub(f, dir) }

func asAppErr(err error, target **apperr.Error) bool { return errors.As(err, target) }
