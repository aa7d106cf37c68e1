# owner: see README (rule file for the analyse stage)
