"""How attempts travel: the task format (protocol), the cluster and its sending (app), and consuming."""
