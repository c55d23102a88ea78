package main

import (
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"image/png"
	"math"
	"os"

	"golang.org/x/image/font"
	"golang.org/x/image/font/basicfont"
	"golang.org/x/image/math/fixed"
)

var palette = map[string]color.RGBA{
	"tsdb-compacted":   {0x1f, 0x77, 0xb4, 0xff},
	"tsdb-flushed":     {0x6b, 0xae, 0xd6, 0xff},
	"tsdb-mixed":       {0xc6, 0xdb, 0xef, 0xff},
	"ceiling":          {0x2c, 0xa0, 0x2c, 0xff},
	"postgres":         {0xd6, 0x27, 0x28, 0xff},
	"postgres-indexed": {0xff, 0x98, 0x96, 0xff},
}

// writePNG draws the median query latencies as grouped bars on a log scale,
// one group per query, one bar per engine.
func (r *report) writePNG(path string) error {
	const (
		h              = 540
		left, right    = 70, 20
		top, bottom    = 60, 80
		barW, groupGap = 14, 16
	)
	// Wide enough for every group and the last query's name.
	w := left + 10 + len(r.Queries)*(len(engines)*barW+groupGap) + 160
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	draw.Draw(img, img.Bounds(), image.White, image.Point{}, draw.Src)
	text := func(x, y int, s string, c color.Color) {
		d := font.Drawer{Dst: img, Src: image.NewUniform(c), Face: basicfont.Face7x13, Dot: fixed.P(x, y)}
		d.DrawString(s)
	}
	// vertical text for query names: one character per line is unreadable,
	// so names are written horizontally in two rows below the bars.
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, q := range r.Queries {
		for _, v := range q.MedianMs {
			if v > 0 {
				lo, hi = math.Min(lo, v), math.Max(hi, v)
			}
		}
	}
	if math.IsInf(lo, 1) {
		lo, hi = 1, 10
	}
	minExp, maxExp := math.Floor(math.Log10(lo)), math.Ceil(math.Log10(hi))
	if maxExp == minExp {
		maxExp++
	}
	plotH := float64(h - top - bottom)
	y := func(v float64) int {
		return h - bottom - int((math.Log10(v)-minExp)/(maxExp-minExp)*plotH)
	}
	grey := color.RGBA{0xcc, 0xcc, 0xcc, 0xff}
	for e := minExp; e <= maxExp; e++ {
		yy := y(math.Pow(10, e))
		for x := left; x < w-right; x++ {
			img.Set(x, yy, grey)
		}
		text(5, yy+4, fmt.Sprintf("%g ms", math.Pow(10, e)), color.Black)
	}
	text(left, 20, fmt.Sprintf("tsdb bench: median query latency (log scale), %d hosts x %s = %d rows; %s", r.Hosts, r.Duration, r.Rows, r.Machine), color.Black)
	lx := left
	for _, e := range engines {
		draw.Draw(img, image.Rect(lx, 32, lx+12, 44), image.NewUniform(palette[e]), image.Point{}, draw.Src)
		text(lx+16, 43, e, color.Black)
		lx += 40 + 7*len(e)
	}
	x := left + 10
	for i, q := range r.Queries {
		gx := x
		for _, e := range engines {
			if v := q.MedianMs[e]; v > 0 {
				draw.Draw(img, image.Rect(x, y(v), x+barW-2, h-bottom), image.NewUniform(palette[e]), image.Point{}, draw.Src)
			}
			x += barW
		}
		// Names alternate between two rows so neighbours do not overlap.
		text(gx, h-bottom+16+14*(i%2)*3, q.Name, color.Black)
		x += groupGap
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := png.Encode(f, img); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
