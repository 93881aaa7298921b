package redisio

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// require is a small stand-in for testify's require (the module's go.sum
// lacks an entry testify needs): each check stops the test on failure.
var require checks

type checks struct{}

func msg(msgAndArgs []any) string {
	if len(msgAndArgs) == 0 {
		return ""
	}
	if f, ok := msgAndArgs[0].(string); ok {
		return ": " + fmt.Sprintf(f, msgAndArgs[1:]...)
	}
	return ": " + fmt.Sprint(msgAndArgs...)
}

func (checks) NoError(t testing.TB, err error, msgAndArgs ...any) {
	t.Helper()
	if err != nil {
		t.Fatalf("unexpected error: %v%s", err, msg(msgAndArgs))
	}
}

func (checks) Error(t testing.TB, err error, msgAndArgs ...any) {
	t.Helper()
	if err == nil {
		t.Fatalf("expected an error%s", msg(msgAndArgs))
	}
}

func (checks) ErrorIs(t testing.TB, err, target error, msgAndArgs ...any) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("error %v is not %v%s", err, target, msg(msgAndArgs))
	}
}

func (checks) EqualError(t testing.TB, err error, want string, msgAndArgs ...any) {
	t.Helper()
	if err == nil || err.Error() != want {
		t.Fatalf("error\n got: %v\nwant: %s%s", err, want, msg(msgAndArgs))
	}
}

func (checks) ErrorContains(t testing.TB, err error, want string, msgAndArgs ...any) {
	t.Helper()
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("error %v does not contain %q%s", err, want, msg(msgAndArgs))
	}
}

func (checks) Equal(t testing.TB, want, got any, msgAndArgs ...any) {
	t.Helper()
	if !reflect.DeepEqual(want, got) {
		t.Fatalf("not equal%s\n got: %#v\nwant: %#v", msg(msgAndArgs), got, want)
	}
}

func (checks) Contains(t testing.TB, s, sub string, msgAndArgs ...any) {
	t.Helper()
	if !strings.Contains(s, sub) {
		t.Fatalf("%q does not contain %q%s", s, sub, msg(msgAndArgs))
	}
}

func (checks) True(t testing.TB, ok bool, msgAndArgs ...any) {
	t.Helper()
	if !ok {
		t.Fatalf("expected true%s", msg(msgAndArgs))
	}
}

func (checks) Len(t testing.TB, v any, n int, msgAndArgs ...any) {
	t.Helper()
	if l := reflect.ValueOf(v).Len(); l != n {
		t.Fatalf("length is %d, want %d%s", l, n, msg(msgAndArgs))
	}
}
