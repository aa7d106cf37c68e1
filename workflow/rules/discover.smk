# owner: see README (rule file for the discover stage)
