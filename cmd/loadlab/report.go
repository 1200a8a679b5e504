package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/loadlab/loadlab/internal/report"
	"github.com/loadlab/loadlab/internal/store"
)

func newReportCommand(io *stdio) *cobra.Command {
	var format string
	c := &cobra.Command{
		Use:   "report RESULT",
		Short: "Render a stored result again",
		Long:  "Render a stored result (a result directory or its result.json) again.",
		Args:  cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			r, err := store.ReadResult(args[0])
			if err != nil {
				return usageError(fmt.Errorf("report: %w", err))
			}
			switch format {
			case "text":
				return report.Text(io.out, r)
			case "json":
				return report.JSON(io.out, r)
			}
			return usageError(fmt.Errorf("report: unknown --format %q: want text or json", format))
		},
	}
	c.Flags().StringVar(&format, "format", "text", "text or json")
	return c
}
