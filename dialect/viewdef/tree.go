package viewdef

// The analysed query, shaped as PostgreSQL's: what its printer
// (ruleutils.c) distinguishes, the analysis distinguishes.

// expr is an analysed expression with its type.
type expr interface{ typ() Type }

// varRef is a column of a relation (Var).
type varRef struct {
	rel, col string
	t        Type
}

// konst is a constant (Const): text is its value as its type's output
// function writes it.
type konst struct {
	t    Type
	text string
	null bool
}

// opExpr is an operator (OpExpr): one argument for a prefix operator.
type opExpr struct {
	op   string
	args []expr
	t    Type
}

// castExpr is a coercion by a cast function (FuncExpr as a cast):
// implicit when the analysis inserted it to match an operator.
type castExpr struct {
	arg      expr
	t        Type
	implicit bool
}

// funcCall is a function (FuncExpr), an aggregate (Aggref, agg) or a
// window function (WindowFunc, over set).
type funcCall struct {
	name     string
	args     []expr
	t        Type
	star     bool
	distinct bool
	agg      bool
	filter   expr
	over     *window
	// withinGroup is an ordered-set aggregate's ordering; args are then
	// its direct arguments.
	withinGroup []sortKey
}

// boolExpr is AND, OR or NOT.
type boolExpr struct {
	op   string
	args []expr
}

// nullTest is IS [NOT] NULL.
type nullTest struct {
	arg expr
	not bool
}

// arrayOp is a ScalarArrayOpExpr over an ARRAY[…]: x = ANY (ARRAY[…]) for
// IN, x <> ALL (ARRAY[…]) for NOT IN.
type arrayOp struct {
	op    string
	all   bool
	left  expr
	elems []expr
}

// caseExpr is CASE [arg] WHEN … THEN … ELSE … END; for a CASE with an
// argument each when is the value compared with it.
type caseExpr struct {
	arg   expr
	whens [][2]expr
	def   expr
	t     Type
}

// varargExpr is COALESCE, GREATEST or LEAST (CoalesceExpr, MinMaxExpr).
type varargExpr struct {
	name string
	args []expr
	t    Type
}

func (e *varRef) typ() Type     { return e.t }
func (e *konst) typ() Type      { return e.t }
func (e *opExpr) typ() Type     { return e.t }
func (e *castExpr) typ() Type   { return e.t }
func (e *funcCall) typ() Type   { return e.t }
func (e *boolExpr) typ() Type   { return tBool }
func (e *nullTest) typ() Type   { return tBool }
func (e *arrayOp) typ() Type    { return tBool }
func (e *caseExpr) typ() Type   { return e.t }
func (e *varargExpr) typ() Type { return e.t }

// sortKey is an ORDER BY, GROUP BY or PARTITION BY item: its expression
// and direction.
type sortKey struct {
	e          expr
	desc       bool
	nullsFirst bool
}

// window is a window clause: named ones print in WINDOW, the others
// inline.
type window struct {
	name        string
	ref         string
	partition   []sortKey
	order       []sortKey
	copiedOrder bool
	frame       int32
	start, end  expr
}

// target is an output column.
type target struct {
	e    expr
	name string
}

// fromItem is a relation in FROM: a table or view, or a function.
type fromItem struct {
	relname string // the table or view
	fn      *funcCall
	alias   string // printed when set (and always for a function)
	refname string // the name columns are qualified with
	cols    []Column
}

// query is an analysed SELECT.
type query struct {
	distinct bool
	targets  []target
	from     []*fromItem
	where    expr
	groupBy  []sortKey
	having   expr
	windows  []*window // named ones, in WINDOW clause order
	orderBy  []sortKey
	limit    expr
	offset   expr
	limitAll bool
}
