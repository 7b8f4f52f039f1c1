// Prints each PEM certificate's subject as Java names it: X500Principal.getName(), the
// RFC 2253 string Kafka's DefaultKafkaPrincipalBuilder maps into an SSL principal. The
// security suite compares the principals the broker reports with these.
//
//   java compat/security/SubjectDn.java CERT.pem...
import java.io.FileInputStream;
import java.security.cert.CertificateFactory;
import java.security.cert.X509Certificate;

public class SubjectDn {
    public static void main(String[] args) throws Exception {
        CertificateFactory factory = CertificateFactory.getInstance("X.509");
        for (String path : args) {
            try (FileInputStream in = new FileInputStream(path)) {
                X509Certificate certificate = (X509Certificate) factory.generateCertificate(in);
                System.out.println(certificate.getSubjectX500Principal().getName());
            }
        }
    }
}
