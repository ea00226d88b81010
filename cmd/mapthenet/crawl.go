package main

import "github.com/spf13/cobra"

func newCrawlCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "crawl",
		Short: "(not built yet: issue 3)",
		RunE:  notYet(3),
	}
}
