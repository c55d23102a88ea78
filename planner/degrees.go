package planner

// PostgreSQL's trigonometric functions in degrees (sind, cosd, tand, cotd,
// asind, acosd, atand, atan2d), computed as its float.c computes them: the
// angle reduced to the first quadrant, and sine and cosine scaled so that
// 30, 45, 60 and 90 degrees give exact answers. The C library's sin, cos,
// asin, acos, atan and atan2 are called, as PostgreSQL calls them: Go's
// own differ from them in the last bit for some arguments. float64(…)
// around a product or quotient rounds it to a double before the next
// operation, as float.c's volatile variables do: Go may otherwise fuse a
// multiply and an add.

/*
#cgo LDFLAGS: -lm
#include <math.h>
*/
import "C"

import (
	"database/sql/driver"
	"math"

	duckdb "github.com/duckdb/duckdb-go/v2"

	"tsdb/internal/sqlerr"
)

// radiansPerDegree is float.c's RADIANS_PER_DEGREE.
const radiansPerDegree = 0.0174532925199432957692

func cSin(x float64) float64      { return float64(C.sin(C.double(x))) }
func cCos(x float64) float64      { return float64(C.cos(C.double(x))) }
func cAsin(x float64) float64     { return float64(C.asin(C.double(x))) }
func cAcos(x float64) float64     { return float64(C.acos(C.double(x))) }
func cAtan(x float64) float64     { return float64(C.atan(C.double(x))) }
func cAtan2(y, x float64) float64 { return float64(C.atan2(C.double(y), C.double(x))) }
func degreeRange() error          { return sqlerr.New(sqlerr.NumericOutOfRange, "input is out of range") }
func plainZero(r float64) float64 { return r + 0 } // -0 + 0 is +0; float.c forces plain zero
func reduce(x float64) float64    { return math.Mod(x, 360) }

// degrees holds float.c's constants of the degree functions.
type degrees struct {
	sin30, oneMinusCos60, asin05, acos05, atan10, tan45, cot45 float64
}

func newDegrees() *degrees {
	// Multiplied as doubles at run time, as C does: Go would multiply the
	// constants exactly and round once.
	rpd, thirty, sixty := float64(radiansPerDegree), 30.0, 60.0
	d := &degrees{
		sin30:         cSin(thirty * rpd),
		oneMinusCos60: 1.0 - cCos(sixty*rpd),
		asin05:        cAsin(0.5),
		acos05:        cAcos(0.5),
		atan10:        cAtan(1.0),
	}
	d.tan45 = d.sinQ1(45.0) / d.cosQ1(45.0)
	d.cot45 = d.cosQ1(45.0) / d.sinQ1(45.0)
	return d
}

func (d *degrees) sin0to30(x float64) float64 {
	return (cSin(float64(x*radiansPerDegree)) / d.sin30) / 2.0
}

func (d *degrees) cos0to60(x float64) float64 {
	return 1.0 - ((1.0-cCos(float64(x*radiansPerDegree)))/d.oneMinusCos60)/2.0
}

func (d *degrees) sinQ1(x float64) float64 {
	if x <= 30.0 {
		return d.sin0to30(x)
	}
	return d.cos0to60(90.0 - x)
}

func (d *degrees) cosQ1(x float64) float64 {
	if x <= 60.0 {
		return d.cos0to60(x)
	}
	return d.sin0to30(90.0 - x)
}

func (d *degrees) asinQ1(x float64) float64 {
	if x <= 0.5 {
		return float64(cAsin(x)/d.asin05) * 30.0
	}
	return 90.0 - float64(cAcos(x)/d.acos05)*60.0
}

func (d *degrees) acosQ1(x float64) float64 {
	if x <= 0.5 {
		return 90.0 - float64(cAsin(x)/d.asin05)*30.0
	}
	return float64(cAcos(x)/d.acos05) * 60.0
}

// firstQuadrant reduces an angle to [0, 90] as float.c's dsind and dtand
// do, with the sign the function's value takes: odd about 0 and 180, and
// about 90 odd too when odd90 (tangent) or even (sine). NaN passes;
// ±Infinity is out of range.
func firstQuadrant(x float64, odd90 bool) (float64, float64, error) {
	if math.IsInf(x, 0) {
		return 0, 0, degreeRange()
	}
	x, sign := reduce(x), 1.0
	if x < 0 {
		x, sign = -x, -sign
	}
	if x > 180 {
		x, sign = 360-x, -sign
	}
	if x > 90 {
		x = 180 - x
		if odd90 {
			sign = -sign
		}
	}
	return x, sign, nil
}

// sind is float.c's dsind.
func (d *degrees) sind(x float64) (float64, error) {
	if math.IsNaN(x) {
		return x, nil
	}
	x, sign, err := firstQuadrant(x, false)
	if err != nil {
		return 0, err
	}
	return sign * d.sinQ1(x), nil
}

// cosd is float.c's dcosd.
func (d *degrees) cosd(x float64) (float64, error) {
	if math.IsNaN(x) {
		return x, nil
	}
	if math.IsInf(x, 0) {
		return 0, degreeRange()
	}
	x, sign := reduce(x), 1.0
	if x < 0 {
		x = -x
	}
	if x > 180 {
		x = 360 - x
	}
	if x > 90 {
		x, sign = 180-x, -sign
	}
	return sign * d.cosQ1(x), nil
}

// tand is float.c's dtand, and cotd (cot) its dcotd.
func (d *degrees) tand(x float64, cot bool) (float64, error) {
	if math.IsNaN(x) {
		return x, nil
	}
	x, sign, err := firstQuadrant(x, true)
	if err != nil {
		return 0, err
	}
	if cot {
		return plainZero(sign * ((d.cosQ1(x) / d.sinQ1(x)) / d.cot45)), nil
	}
	return plainZero(sign * ((d.sinQ1(x) / d.cosQ1(x)) / d.tan45)), nil
}

// asind is float.c's dasind, and acosd (cos) its dacosd: both read an
// argument in [-1, 1], a negative one through asin's first quadrant.
func (d *degrees) asind(x float64, cos bool) (float64, error) {
	switch {
	case math.IsNaN(x):
		return x, nil
	case x < -1 || x > 1:
		return 0, degreeRange()
	case x >= 0 && cos:
		return d.acosQ1(x), nil
	case x >= 0:
		return d.asinQ1(x), nil
	case cos:
		return 90.0 + d.asinQ1(-x), nil
	}
	return -d.asinQ1(-x), nil
}

// atand is float.c's datand.
func (d *degrees) atand(x float64) float64 {
	if math.IsNaN(x) {
		return x
	}
	return float64(cAtan(x)/d.atan10) * 45.0
}

// atan2d is float.c's datan2d.
func (d *degrees) atan2d(y, x float64) float64 {
	if math.IsNaN(x) || math.IsNaN(y) {
		return math.NaN()
	}
	return float64(cAtan2(y, x)/d.atan10) * 45.0
}

// degreeFunctions are the engine functions of this file.
func degreeFunctions() []goScalar {
	d := newDegrees()
	f8 := duckdb.TYPE_DOUBLE
	num := func(v driver.Value) float64 { f, _ := v.(float64); return f }
	unary := func(name string, fn func(float64) (float64, error)) goScalar {
		return goScalar{name, []duckdb.Type{f8}, f8, func(v []driver.Value) (any, error) { return fn(num(v[0])) }}
	}
	return []goScalar{
		unary("_tsdb_sind", d.sind),
		unary("_tsdb_cosd", d.cosd),
		unary("_tsdb_tand", func(x float64) (float64, error) { return d.tand(x, false) }),
		unary("_tsdb_cotd", func(x float64) (float64, error) { return d.tand(x, true) }),
		unary("_tsdb_asind", func(x float64) (float64, error) { return d.asind(x, false) }),
		unary("_tsdb_acosd", func(x float64) (float64, error) { return d.asind(x, true) }),
		unary("_tsdb_atand", func(x float64) (float64, error) { return d.atand(x), nil }),
		{"_tsdb_atan2d", []duckdb.Type{f8, f8}, f8, func(v []driver.Value) (any, error) { return d.atan2d(num(v[0]), num(v[1])), nil }},
	}
}
