# owner: see README (rule file for the tokens stage)
