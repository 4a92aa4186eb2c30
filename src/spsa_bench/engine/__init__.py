"""The replay engine: one optimizer over one schedule for all seeds at once, and
the ``simulate`` entry that builds the problem, the schedule and the run file."""
