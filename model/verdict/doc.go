// Package verdict is what the commands print: verdicts, the rows they come
// from, and the catalog's entry type.
//
//   - [Verdict]: SAFE (with the bound and statistics), UNSAFE (with the
//     shortest counterexample) or UNKNOWN (a budget or a signal stopped the
//     search); Expected compares it with what the row is there for.
//   - [Row]: one row of the verdict table: model, configuration, bound,
//     whether it is a negative control or a proof-only row, and its Check.
//     [Row.Name] builds every row name; [FromResult] turns a search into
//     the row's verdict.
//   - [Protocol]: a catalog entry: name, rows, documentation, and its
//     [Cost] table ([CostTable]: flags, rows as text or JSON).
//   - [Table], [WriteTable], [Record]: the verdict table as text, streamed
//     a row at a time, and as JSON objects ("check.row").
package verdict
