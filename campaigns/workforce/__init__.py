"""Workers, qualifications, quizzes, protocol arms and rounds."""
