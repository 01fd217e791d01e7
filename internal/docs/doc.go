// Package docs holds the checks of dynwatch's user documentation (README.md
// and the pages under docs/): every relative link resolves to a file and, for
// a #anchor, to a heading of that file; the README stays a first visit's
// length; and the docs index links every page. It has no code of its own.
package docs
